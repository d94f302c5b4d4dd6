// The guard benchmarks' login mix, in one place for guard-bench.ts, guard-pairs.mjs and guard-ab.mjs: pair i
// is account `user${(i * 7919) % ACCOUNTS}@example.com` from address floodIp((i * 104,729) % ADDRESSES),
// a success but every fourth, which fails with password `pw${i}`.

export const ACCOUNTS = 50_000;
export const ADDRESSES = 20_000;

/** The n-th address of a flood: distinct for every n below 2^24, spread over 2^16 /24 subnets. */
export const floodIp = (n) => `${11 + (n >>> 16)}.${(n >>> 8) & 255}.${n & 255}.${1 + (n % 250)}`;

/**
 * Check+record pairs per second of `Guard` (the class of whichever build is measured) on its default memory
 * store, over the mix above: 20,000 pairs of warm-up for the JIT, then `pairs` timed, on an injected clock
 * that moves 1 ms a pair.
 */
export async function pairsPerSecond(Guard, pairs) {
  let now = 1_760_000_000_000;
  const guard = new Guard({ secret: 'bench-secret-0123456789abcdef', clock: () => now, random: () => 0.5 });
  let rate = 0;
  for (const n of [20_000, pairs]) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      now += 1;
      const account = `user${(i * 7919) % ACCOUNTS}@example.com`;
      const ip = floodIp((i * 104_729) % ADDRESSES);
      await guard.check({ account, ip });
      await guard.record({ account, ip, success: i % 4 !== 0, password: i % 4 === 0 ? `pw${i}` : undefined });
    }
    rate = n / ((performance.now() - t0) / 1000);
  }
  return rate;
}
