// What an attacker can make the guard store on Redis (issue 46 finding 4): bytes and keys per attempt, and
// how long each kind of key lives, on a redis-server this script starts on a spare port (so INFO counts
// nothing else), for this tree and for the commit given (from `git archive`), in one run.
//
// Scenarios (each attempt a new source and, where there is a record, a new account):
// - ipv4-failures: check + record(failure) from N distinct IPv4 addresses in N distinct /24s;
// - ipv6-failures: the same from N distinct IPv6 /64s;
// - one-64-blocked: N checks from random addresses in one deny-listed IPv6 /64 (each refused, no record).
// Per scenario: used_memory and keys added per attempt, and per kind of key (account, pair bucket, source)
// how many, MEMORY USAGE on average, and the median and longest PTTL. From them: the growth per hour at 1,000
// attempts a second, and the steady state, when every key lives out its median PTTL (keys × usage ×
// lifetime × rate). The attempts come as fast as the guard takes them (thousands a second), a flood for
// this tree's record budget (budget.ts): its median PTTL is what a flood's records get.
//
// Run: node --conditions=sluice-source --import tsx bench/guard-growth.ts [attempts=20000] [before=09cdb73]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort, OwnRedis } from '../packages/testing/src/harness.js';

const ROOT = join(import.meta.dirname, '..');
const attempts = Number(process.argv[2] ?? 20_000);
const beforeRef = process.argv[3] ?? '09cdb73';
const RATE = 1000; // attempts a second

type Scenario = 'ipv4-failures' | 'ipv6-failures' | 'one-64-blocked';
const SCENARIOS: Scenario[] = ['ipv4-failures', 'ipv6-failures', 'one-64-blocked'];

interface Kind {
  keys: number;
  usage: number;
  /** The median PTTL (most keys') and the longest (the first ones, written before a budget saw the flood). */
  ttlMs: number;
  maxTtlMs: number;
}
interface Row {
  tree: string;
  scenario: Scenario;
  bytesPerAttempt: number;
  keysPerAttempt: number;
  kinds: Record<string, Kind>;
}

function treeOf(ref: string): string {
  const dir = mkdtempSync(join(tmpdir(), `sluice-growth-${ref}-`));
  execFileSync('sh', ['-c', `git -C ${ROOT} archive ${ref} | tar -x -C ${dir}`]);
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

const v4 = (i: number) => `${11 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.7`;
const v6 = (i: number) => `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::7`;
const in64 = (i: number) =>
  `2001:db8:aaaa:1:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}:${((i * 7919) & 0xffff).toString(16)}:1`;

function kindOf(key: string): string {
  if (key.includes('{gs:')) return 'source';
  if (key.includes('}:p:')) return 'pair bucket';
  if (key.includes('{ga:')) return 'account';
  return 'other';
}

async function measure(root: string, tree: string, scenario: Scenario, port: number): Promise<Row> {
  const { Guard } = await import(`${root}/src/guard/index.ts`);
  const { RedisStore } = await import(`${root}/src/stores/redis/index.ts`);
  const client = new Redis({ port, host: '127.0.0.1' });
  await once(client, 'ready');
  await client.flushall();
  const info = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  const store = new RedisStore({
    client,
    prefix: 'g',
    timeoutMs: 5000,
    ...(tree === 'this tree' ? { logger: false } : {}),
  });
  const guard = new Guard({ secret: 'growth bench secret, long enough', store, denyList: ['2001:db8:aaaa:1::/64'] });
  await guard.check({ account: 'warm', ip: '198.51.100.1' });
  await client.flushall();
  const before = await info();
  const keys0 = await client.dbsize();
  for (let i = 0; i < attempts; i += 64) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(attempts, i + 64); j++) {
      const ip = scenario === 'ipv4-failures' ? v4(j) : scenario === 'ipv6-failures' ? v6(j) : in64(j);
      const account = `user-${j}@example.com`;
      batch.push(
        guard
          .check({ account, ip })
          .then(() =>
            scenario === 'one-64-blocked'
              ? undefined
              : guard.record({ account, ip, success: false, password: 'guess' }),
          ),
      );
    }
    await Promise.all(batch);
  }
  const after = await info();
  const keys = await client.keys('*');
  const kinds: Record<string, Kind> = {};
  const samples: Record<string, string[]> = {};
  for (const k of keys) (samples[kindOf(k)] ??= []).push(k);
  for (const [kind, list] of Object.entries(samples)) {
    const sample = list.filter((_, i) => i % Math.max(1, Math.floor(list.length / 500)) === 0);
    let usage = 0;
    const ttl: number[] = [];
    for (const k of sample) {
      usage += Number(await client.call('MEMORY', 'USAGE', k));
      ttl.push(await client.pttl(k));
    }
    ttl.sort((a, b) => a - b);
    kinds[kind] = {
      keys: list.length,
      usage: usage / sample.length,
      ttlMs: ttl[Math.floor(ttl.length / 2)]!,
      maxTtlMs: ttl.at(-1)!,
    };
  }
  guard.close?.();
  client.disconnect();
  return {
    tree,
    scenario,
    bytesPerAttempt: (after - before) / attempts,
    keysPerAttempt: (keys.length - keys0) / attempts,
    kinds,
  };
}

const fmtBytes = (b: number) =>
  b >= 1e9 ? `${(b / 1e9).toFixed(1)} GB` : b >= 1e6 ? `${(b / 1e6).toFixed(1)} MB` : `${(b / 1e3).toFixed(1)} kB`;
const fmtMs = (ms: number) =>
  ms >= 86_400_000
    ? `${(ms / 86_400_000).toFixed(1)} d`
    : ms >= 3_600_000
      ? `${(ms / 3_600_000).toFixed(1)} h`
      : `${Math.round(ms / 60_000)} min`;

const server = new OwnRedis(await freePort());
await server.start();
const rows: Row[] = [];
const beforeTree = treeOf(beforeRef);
try {
  for (const scenario of SCENARIOS) {
    rows.push(await measure(ROOT, 'this tree', scenario, server.port));
    rows.push(await measure(beforeTree, beforeRef, scenario, server.port));
  }
} finally {
  await server.destroy();
  rmSync(beforeTree, { recursive: true, force: true });
}

const lines: string[] = [];
lines.push(`# guard growth on Redis: ${attempts} attempts per scenario, this tree against ${beforeRef}`, '');
lines.push(
  `\`node --conditions=sluice-source --import tsx bench/guard-growth.ts ${attempts} ${beforeRef}\`; redis-server ${execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1]}, one run.`,
  '',
);
lines.push(
  '| scenario | tree | bytes / attempt | keys / attempt | per kind: keys per attempt × MEMORY USAGE, median PTTL (longest) | growth per hour at 1,000/s | steady state at 1,000/s |',
);
lines.push('|---|---|---|---|---|---|---|');
for (const r of rows) {
  const kinds = Object.entries(r.kinds)
    .map(
      ([k, v]) =>
        `${k}: ${(v.keys / attempts).toFixed(2)} × ${Math.round(v.usage)} B, ${fmtMs(v.ttlMs)} (${fmtMs(v.maxTtlMs)})`,
    )
    .join('; ');
  const hour = r.bytesPerAttempt * RATE * 3600;
  // Each kind's keys live out their PTTL: the steady state holds rate × lifetime of each.
  const steady = Object.values(r.kinds).reduce(
    (sum, v) => sum + (v.keys / attempts) * v.usage * RATE * (v.ttlMs / 1000),
    0,
  );
  lines.push(
    `| ${r.scenario} | ${r.tree} | ${Math.round(r.bytesPerAttempt)} | ${r.keysPerAttempt.toFixed(2)} | ${kinds} | ${fmtBytes(hour)} | ${fmtBytes(steady)} |`,
  );
}
const text = lines.join('\n') + '\n';
console.log(text);
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const file = join(ROOT, `bench/results/guard-growth-${new Date().toISOString().slice(0, 16).replace(/:/g, '-')}Z.md`);
writeFileSync(file, text);
console.log(`written to ${file}`);
