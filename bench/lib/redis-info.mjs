// The parts of Redis's `INFO all` the Redis benchmarks read: commands by name (inside scripts included)
// and the server's CPU seconds. Shared by bench/redis-worker.mjs (ioredis) and bench/redis.mjs (redis-cli).

/** { 'cmd:<name>': calls, used_cpu_sys, used_cpu_user } from the text of `INFO all`. */
export function parseInfo(text) {
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) out[`cmd:${m[1]}`] = Number(m[2]);
    const c = /^(used_cpu_sys|used_cpu_user):([\d.]+)/.exec(line);
    if (c) out[c[1]] = Number(c[2]);
  }
  return out;
}

/** Every command counted, but INFO itself (the benchmark's own snapshots). */
export const commands = (s) =>
  Object.entries(s)
    .filter(([k]) => k.startsWith('cmd:') && k !== 'cmd:info')
    .reduce((a, [, v]) => a + v, 0);

/** The server's CPU seconds, user and system. */
export const cpuSeconds = (s) => s.used_cpu_sys + s.used_cpu_user;
