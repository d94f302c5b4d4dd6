// The guard on Redis beside rate-limiter-flexible's login recipe, and beside the build before, in one run
// on one redis-server that this script starts on a spare port (so INFO counts nothing else). For each
// contender, mix and concurrency, one measurement per fresh process, repetitions interleaved; medians.
//
// Contenders:
// - sluice: this tree's Guard on a RedisStore (buckets and guard state on Redis);
// - before: the same at the commit given (default fe2dda9, the build before issue 29), from `git archive`;
// - rlflex: rate-limiter-flexible's documented login protection on RateLimiterRedis: a consecutive-failures
//   limiter keyed by username+IP (10 points, 90 days, 1 h block) and a failures-per-day limiter keyed by
//   IP (100 points, 1 day, 1 day block); `get` both before the password check, refuse when either is
//   over, `consume` both on a failure, `delete` the pair on a success that follows failures (as its docs'
//   example does: `if (resUsernameAndIP !== null && resUsernameAndIP.consumedPoints > 0)`).
// Mixes (a login is a check, then a record unless the check refused it):
// - typical: 50,000 accounts from 20,000 addresses, 5 % of logins fail (wrong password), each login its
//   account's first (a stranger's);
// - returning: the same logins, each account having logged in once before from the same address (an
//   untimed pass of successes first), so each success is its owner's, from a familiar address;
// - stuffing: a wave where 80 % of logins are an attacker's, each a new account with a wrong password,
//   from 512 addresses in 8 /24s, and 20 % are the typical mix's.
// Figures per login: Redis commands sent by the client (counted at ioredis's sendCommand), commands run
// by Redis (INFO commandstats, those inside scripts included), Redis CPU (used_cpu_sys + used_cpu_user).
//
// Run: [MIXES=typical,returning,stuffing] [IN_FLIGHT=1,64] [CONTENDERS=sluice,before,rlflex]
//   node --conditions=sluice-source --import tsx bench/guard-redis.ts [pairs=4000] [reps=3] [before=fe2dda9]
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort, OwnRedis } from '../packages/testing/src/harness.js';

type Contender = 'sluice' | 'before' | 'rlflex';
type Mix = 'typical' | 'returning' | 'stuffing';
interface Result {
  contender: Contender;
  mix: Mix;
  inFlight: number;
  pairs: number;
  pairsPerSecond: number;
  sentPerPair: number;
  redisCommandsPerPair: number;
  cpuUsPerPair: number;
  /** The same less what an idle redis-server burns meanwhile (its serverCron), measured before the run. */
  netCpuUsPerPair: number;
  refused: number;
}

const MIXES = (process.env.MIXES?.split(',') ?? ['typical', 'returning', 'stuffing']) as Mix[];
const IN_FLIGHT = (process.env.IN_FLIGHT?.split(',') ?? ['1', '64']).map(Number);
const CONTENDERS = (process.env.CONTENDERS?.split(',') ?? ['sluice', 'before', 'rlflex']) as Contender[];
const ACCOUNTS = 50_000;
const ADDRESSES = 20_000;
const floodIp = (n: number) => `${11 + (n >>> 16)}.${(n >>> 8) & 255}.${n & 255}.${1 + (n % 250)}`;

/** Login i of a mix: who, from where, and whether the password is right. */
function login(mix: Mix, i: number): { account: string; ip: string; success: boolean; password?: string } {
  if (mix === 'stuffing' && i % 5 !== 0) {
    const a = (i * 2_654_435_761) >>> 0;
    return {
      account: `victim${a % 1_000_000}@example.com`,
      ip: `45.${10 + (i % 8)}.0.${1 + ((i >>> 3) % 64)}`,
      success: false,
      password: `combo${i}`,
    };
  }
  const account = `user${(i * 7919) % ACCOUNTS}@example.com`;
  const ip = floodIp((i * 104_729) % ADDRESSES);
  const success = i % 20 !== 7;
  return success ? { account, ip, success } : { account, ip, success, password: `pw${i}` };
}

// ---- one measurement (a child process) ----

async function measure(
  contender: Contender,
  mix: Mix,
  inFlight: number,
  pairs: number,
  port: number,
  beforeDir: string,
  idleCpuUsPerMs: number,
): Promise<Result> {
  const client = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: true });
  await once(client, 'ready');
  let sent = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: unknown, stream?: unknown) => {
    sent++;
    return send(command as never, stream as never);
  }) as typeof client.sendCommand;
  const info = new Redis({ port, host: '127.0.0.1' });
  const prefix = `b${process.pid}`;
  const run = await contenderRun(contender, client, prefix, beforeDir);
  let refused = 0;
  let next = 0;
  /** Runs `count` logins from `offset` on; `succeed`: each as a success, whatever the mix says. */
  const worker = async (count: number, offset: number, succeed = false) => {
    for (let k = 0; k < count; k++) {
      const l = login(mix, offset + next++);
      if (!(await run(succeed ? { ...l, success: true, password: undefined } : l))) refused++;
    }
  };
  // Warm-up: the JIT, the script loads, and a state that is not empty, on accounts the run does not log in
  // to (a typical login's account is a bijection of its index below ACCOUNTS), so that each of the run's
  // logins stays its account's first.
  const warmUp = 1000;
  if (Math.ceil(pairs / inFlight) * inFlight > ACCOUNTS - warmUp)
    throw new Error(`at most ${ACCOUNTS - warmUp} logins a measurement, got ${pairs}`);
  await Promise.all(Array.from({ length: inFlight }, () => worker(Math.floor(warmUp / inFlight), ACCOUNTS - warmUp)));
  const each = Math.ceil(pairs / inFlight);
  if (mix === 'returning') {
    // The run's accounts log in once first, successfully, from the addresses the run uses.
    next = 0;
    await Promise.all(Array.from({ length: inFlight }, () => worker(each, 0, true)));
  }
  next = 0;
  refused = 0;
  const snap = async () => parse(await info.info('all'));
  const a = await snap();
  const sent0 = sent;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, () => worker(each, 0)));
  const ms = performance.now() - t0;
  const sentN = sent - sent0;
  const b = await snap();
  const done = each * inFlight;
  client.disconnect();
  info.disconnect();
  return {
    contender,
    mix,
    inFlight,
    pairs: done,
    pairsPerSecond: (done / ms) * 1000,
    sentPerPair: sentN / done,
    redisCommandsPerPair: (b.commands - a.commands - 1) / done, // less the second INFO
    cpuUsPerPair: ((b.cpu - a.cpu) * 1e6) / done,
    netCpuUsPerPair: ((b.cpu - a.cpu) * 1e6 - idleCpuUsPerMs * ms) / done,
    refused: refused / done,
  };
}

/** A login as the contender runs it: true when its check let it through to the password check. */
async function contenderRun(
  contender: Contender,
  client: Redis,
  prefix: string,
  beforeDir: string,
): Promise<(l: ReturnType<typeof login>) => Promise<boolean>> {
  if (contender === 'rlflex') {
    const { RateLimiterRedis } = await import('rate-limiter-flexible');
    const byIp = new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${prefix}_ip_per_day`,
      points: 100,
      duration: 86_400,
      blockDuration: 86_400,
    });
    const byPair = new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${prefix}_consecutive_username_and_ip`,
      points: 10,
      duration: 86_400 * 90,
      blockDuration: 3600,
    });
    return async (l) => {
      const pairKey = `${l.account}_${l.ip}`;
      const [pair, ip] = await Promise.all([byPair.get(pairKey), byIp.get(l.ip)]);
      if ((pair !== null && pair.consumedPoints > 10) || (ip !== null && ip.consumedPoints > 100)) return false;
      if (!l.success) {
        try {
          await Promise.all([byIp.consume(l.ip), byPair.consume(pairKey)]);
        } catch (rejected) {
          if (rejected instanceof Error) throw rejected; // a RateLimiterRes rejection is "now blocked"
        }
      } else if (pair !== null && pair.consumedPoints > 0) {
        await byPair.delete(pairKey);
      }
      return true;
    };
  }
  // This tree's packages through their entries (the sluice-source condition serves their sources); the
  // build before, from the one tree it had then.
  const { Guard } = await import(contender === 'sluice' ? '@sluice/guard' : `${beforeDir}/src/guard/index.ts`);
  const { RedisStore } = await import(
    contender === 'sluice' ? 'sluice/redis' : `${beforeDir}/src/stores/redis/index.ts`
  );
  const store = new RedisStore({ client, prefix, timeoutMs: 10_000, onError: 'closed' }); // a loaded machine stalls: measure, don't time out
  const guard = new Guard({ secret: 'bench-secret-0123456789abcdef', store });
  return async (l) => {
    const v = await guard.check({ account: l.account, ip: l.ip });
    if (v.action === 'block' || v.action === 'challenge' || v.action === 'mfa') return false;
    await guard.record(l);
    return true;
  };
}

function parse(text: string): { commands: number; cpu: number } {
  let commands = 0;
  let cpu = 0;
  for (const line of text.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m && m[1] !== 'info') commands += Number(m[2]);
    const c = /^(used_cpu_sys|used_cpu_user):([\d.]+)/.exec(line);
    if (c) cpu += Number(c[2]);
  }
  return { commands, cpu };
}

// ---- the run ----

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const [PAIRS = 4000, REPS = 3] = process.argv.slice(2, 4).map(Number);
  const BEFORE = process.argv[4] ?? 'fe2dda9';
  const beforeDir = mkdtempSync(join(tmpdir(), `sluice-${BEFORE}-`));
  if (CONTENDERS.includes('before')) execFileSync('sh', ['-c', `git archive ${BEFORE} src | tar -x -C ${beforeDir}`]);
  if (!existsSync(join(beforeDir, 'node_modules')))
    symlinkSync(join(process.cwd(), 'node_modules'), join(beforeDir, 'node_modules'));
  const server = new OwnRedis(await freePort());
  await server.start();
  const flush = new Redis({ port: server.port, host: '127.0.0.1' });
  const results: Result[] = [];
  const c0 = parse(await flush.info('all')).cpu;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 3000));
  const idleCpuUsPerMs = ((parse(await flush.info('all')).cpu - c0) * 1e6) / (performance.now() - t0);
  try {
    for (let rep = 0; rep < REPS; rep++) {
      for (const mix of MIXES) {
        for (const inFlight of IN_FLIGHT) {
          for (const contender of CONTENDERS) {
            await flush.flushall(); // our own server: each measurement starts from an empty Redis
            const pairs = inFlight === 1 ? Math.ceil(PAIRS / 4) : PAIRS;
            const r = await child([
              contender,
              mix,
              String(inFlight),
              String(pairs),
              String(server.port),
              beforeDir,
              String(idleCpuUsPerMs),
            ]);
            results.push(r);
            process.stderr.write(
              `rep ${rep + 1} ${mix} ${inFlight} ${contender}: ${Math.round(r.pairsPerSecond)} pairs/s, ${r.sentPerPair.toFixed(2)} sent, ${r.redisCommandsPerPair.toFixed(1)} run, ${r.cpuUsPerPair.toFixed(1)} µs CPU\n`,
            );
          }
        }
      }
    }
  } finally {
    flush.disconnect();
    await server.destroy();
    rmSync(beforeDir, { recursive: true, force: true });
  }
  console.log(
    `guard on Redis, ${REPS} reps (medians), ${PAIRS} logins at 64 in flight and ${Math.ceil(PAIRS / 4)} at 1; before = ${BEFORE}; an idle redis-server burnt ${(idleCpuUsPerMs * 1000).toFixed(0)} µs of CPU a second\n`,
  );
  console.log(
    '| mix | in flight | contender | logins/s | × before | × rlflex | commands sent / login | run by Redis / login | Redis CPU µs / login | the same, less idle | refused |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const mix of MIXES) {
    for (const inFlight of IN_FLIGHT) {
      const med = (c: Contender, f: (r: Result) => number) =>
        median(results.filter((r) => r.mix === mix && r.inFlight === inFlight && r.contender === c).map(f));
      for (const c of CONTENDERS) {
        const rate = med(c, (r) => r.pairsPerSecond);
        // Same-rep ratios, then their median: drift between reps cancels.
        const ratio = (other: Contender) => {
          const mine = results.filter((r) => r.mix === mix && r.inFlight === inFlight && r.contender === c);
          const theirs = results.filter((r) => r.mix === mix && r.inFlight === inFlight && r.contender === other);
          if (theirs.length === 0) return '–'; // not in this run (CONTENDERS)
          return median(mine.map((r, i) => r.pairsPerSecond / theirs[i]!.pairsPerSecond)).toFixed(2);
        };
        console.log(
          `| ${mix} | ${inFlight} | ${c} | ${Math.round(rate).toLocaleString('en')} | ${ratio('before')} | ${ratio('rlflex')} | ${med(c, (r) => r.sentPerPair).toFixed(2)} | ${med(c, (r) => r.redisCommandsPerPair).toFixed(1)} | ${med(c, (r) => r.cpuUsPerPair).toFixed(1)} | ${med(c, (r) => r.netCpuUsPerPair).toFixed(1)} | ${(med(c, (r) => r.refused) * 100).toFixed(0)} % |`,
        );
      }
    }
  }
}

function child(args: string[]): Promise<Result> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, '--one', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Result)
        : reject(new Error(`measurement ${args.join(' ')} exited ${code}`)),
    );
  });
}

if (process.argv[2] === '--one') {
  const [contender, mix, inFlight, pairs, port, beforeDir, idle] = process.argv.slice(3);
  console.log(
    JSON.stringify(
      await measure(
        contender as Contender,
        mix as Mix,
        Number(inFlight),
        Number(pairs),
        Number(port),
        beforeDir!,
        Number(idle),
      ),
    ),
  );
} else {
  await main();
}
