// Timed A/B of the guard between builds: check+record pairs per second on the memory store, the mix of
// guard-bench.ts (75 % successes, 50,000 accounts, 20,000 addresses), each measurement in a fresh process
// (20,000 pairs of warm-up, then `pairs` timed), the builds alternating round by round so that they share
// the host's state. Quote the per-round ratios: on a shared host the absolute figures drift.
//
//   npm run build
//   git worktree add --detach /tmp/sluice-old <rev> && (cd /tmp/sluice-old && ln -s "$OLDPWD/node_modules" && npm run build)
//   node bench/guard-ab.mjs <rounds> <pairs> /tmp/sluice-old/dist dist
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pairsPerSecond } from './lib/guard-mix.mjs';
import { hostSpeedLine } from './lib/host-speed.mjs';

if (process.argv[2] === '--one') {
  // Child: one measurement of one build, `--one <dist> <pairs>`.
  const dist = process.argv[3];
  const pairs = Number(process.argv[4]);
  const { Guard } = await import(pathToFileURL(join(resolve(dist), 'guard/index.js')).href);
  const rate = await pairsPerSecond(Guard, pairs);
  console.log(Math.round(rate));
  process.exit(0);
}

const [roundsArg, pairsArg, ...builds] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 5);
const pairs = Number(pairsArg ?? 200_000);
if (builds.length === 0) builds.push('dist');
const self = fileURLToPath(import.meta.url);
console.log(hostSpeedLine());
const rates = builds.map(() => []);
for (let r = 0; r < rounds; r++) {
  const order = builds.map((_, i) => i);
  if (r % 2 === 1) order.reverse(); // every other round in reverse, so neither build always runs first
  for (const i of order) {
    rates[i][r] = Number(
      execFileSync(process.execPath, [self, '--one', builds[i], String(pairs)], { encoding: 'utf8' }).trim(),
    );
  }
  console.log(`round ${r + 1}: ${builds.map((b, i) => `${b} ${rates[i][r].toLocaleString('en')}`).join(', ')}`);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (let i = 0; i < builds.length; i++) {
  console.log(
    `${builds[i]}: median ${median(rates[i]).toLocaleString('en')} pairs/s (${Math.min(...rates[i]).toLocaleString('en')}–${Math.max(...rates[i]).toLocaleString('en')})`,
  );
}
for (let i = 1; i < builds.length; i++) {
  const ratios = rates[i].map((x, r) => x / rates[0][r]);
  console.log(
    `${builds[i]} ÷ ${builds[0]}: median of per-round ratios ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)})`,
  );
}
console.log(hostSpeedLine());
