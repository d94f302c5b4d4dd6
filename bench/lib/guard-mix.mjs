// The guard benchmarks' login mix, in one place for guard-bench.ts, guard-pairs.mjs and guard-ab.mjs: pair i
// is account `user${(i * 7919) % ACCOUNTS}@example.com` from address floodIp((i * 104,729) % ADDRESSES),
// a success but every fourth, which fails with password `pw${i}`.

export const ACCOUNTS = 50_000;
export const ADDRESSES = 20_000;

/** The n-th address of a flood: distinct for every n below 2^24, spread over 2^16 /24 subnets. */
export const floodIp = (n) => `${11 + (n >>> 16)}.${(n >>> 8) & 255}.${n & 255}.${1 + (n % 250)}`;
