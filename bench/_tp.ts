import { Guard } from '/work/wt-guard/src/guard/index.js';
let now = 1_760_000_000_000;
const guard = new Guard({ secret: 'bench-secret-0123456789abcdef', clock: () => now, random: () => 0.5 });
const floodIp = (n: number) => `${11 + (n >>> 16)}.${(n >>> 8) & 255}.${n & 255}.${1 + (n % 250)}`;
for (const n of [20000, 100000]) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    now += 1;
    const account = `user${(i * 7919) % 50000}@example.com`;
    const ip = floodIp((i * 104_729) % 20000);
    await guard.check({ account, ip });
    await guard.record({ account, ip, success: i % 4 !== 0, password: i % 4 === 0 ? `pw${i}` : undefined });
  }
  console.log(((performance.now() - t0) * 1000 / n).toFixed(2), 'µs/pair');
}
