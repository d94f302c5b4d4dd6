// Instruction counts of the guard: N check+record pairs with guard-bench.ts's mix (75% successes, 50,000 accounts,
// 20,000 addresses), on a built dist (plain JS: no tsx loader thread to add noise to the count). After npm run build:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --predictable bench/guard-pairs.mjs dist N
// at two values of N; the difference of the two counts over the difference of the Ns is the cost per pair.
import { ACCOUNTS, ADDRESSES, floodIp } from './lib/guard-mix.mjs';

const { Guard } = await import(new URL(`../${process.argv[2] ?? 'dist'}/guard/index.js`, import.meta.url).href);
const pairs = Number(process.argv[3] ?? 10_000);
let now = 1_760_000_000_000;
const guard = new Guard({ secret: 'bench-secret-0123456789abcdef', clock: () => now, random: () => 0.5 });
let blocked = 0;
for (let i = 0; i < pairs; i++) {
  now += 1;
  const account = `user${(i * 7919) % ACCOUNTS}@example.com`;
  const ip = floodIp((i * 104_729) % ADDRESSES);
  const v = await guard.check({ account, ip });
  if (v.action !== 'allow') blocked++;
  await guard.record({ account, ip, success: i % 4 !== 0, password: i % 4 === 0 ? `pw${i}` : undefined });
}
console.log(`${pairs} pairs, ${blocked} not allowed`);
