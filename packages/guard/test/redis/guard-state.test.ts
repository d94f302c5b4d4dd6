// The guard on a standalone Redis (127.0.0.1:6379 or REDIS_URL): the guard conformance suite with the
// Redis guard state given explicitly and taken from a RedisStore, through both clients; a differential
// run against the memory state; privacy and TTLs of every key left. Unique prefixes; nothing is flushed.
// Stores and states fail closed here, so a Redis error fails a test instead of being answered quietly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicies, type Decision } from '../../../sluice/src/core/index.js';
import { tagAttempt, type AttemptTagger, type TaggedAttempt } from '../../src/attempt.js';
import { Guard, MemoryGuardState, RedisGuardState } from '../../src/index.js';
import { KeyedHasher } from '../../src/keyed-hash.js';
import { Reputation } from '../../src/reputation.js';
import { judgePath } from '../../src/rules.js';
import type { LoginConfig, LoginPort, LoginReads } from '../../src/state.js';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import * as sluiceRedis from '../../../sluice/src/stores/redis/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { guardConformance } from '../contracts/guard-conformance.js';
import { assertNoPlainValue, privacyTrace } from '../support/privacy.js';
import { packSuccess, succeededAccount } from '../../src/redis/records.js';
import { GUARD_SCRIPT } from '../../src/redis/state.js';
import { successArgs } from '../../src/redis/wire.js';
import { RedisConnection } from '../../../sluice/src/stores/redis/connection.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const base = runPrefix('guard');
let n = 0;
/** A prefix per guard, so each conformance case starts from nothing. */
const fresh = () => `${base}:${n++}`;

// Every key has a TTL, but familiar sources keep an account for 30 days: take this run's keys back.
const { io, nr } = await connectBothClients(async (client) => {
  for (const k of await client.keys(`${base}:*`)) await client.unlink(k);
});

/** Every key under `prefix` with its TTL and its value, as text. */
async function dumpRedis(prefix: string): Promise<{ text: string; ttls: Map<string, number> }> {
  const keys = await io.keys(`${prefix}:*`);
  const ttls = new Map<string, number>();
  const parts: string[] = [];
  for (const k of keys) {
    ttls.set(k, await io.pttl(k));
    const type = await io.type(k);
    const value =
      type === 'hash'
        ? await io.hgetall(k)
        : type === 'zset'
          ? await io.zrange(k, '0', '-1', 'WITHSCORES')
          : String(await io.dump(k));
    parts.push(k, JSON.stringify(value));
  }
  return { text: parts.join('\n'), ttls };
}

/** The prefix a store or state was made with (one per guard here), for dumping. */
const prefixOf = (x: unknown) => (x as { prefix: string }).prefix;

guardConformance('redis guard state (ioredis, explicit state)', {
  makeStore: () => new RedisStore({ client: io, prefix: fresh(), clock: 'client', timeoutMs: 2000, onError: 'closed' }),
  makeState: () => new RedisGuardState({ client: io, prefix: `${base}:${n - 1}`, timeoutMs: 2000, onError: 'closed' }),
  dump: async (store) => (await dumpRedis(prefixOf(store))).text,
});

guardConformance('redis guard state (ioredis, taken from the store)', {
  makeStore: () => new RedisStore({ client: io, prefix: fresh(), clock: 'client', timeoutMs: 2000, onError: 'closed' }),
  dump: async (store) => (await dumpRedis(prefixOf(store))).text,
});

guardConformance('redis guard state (node-redis, taken from the store)', {
  makeStore: () => new RedisStore({ client: nr, prefix: fresh(), clock: 'client', timeoutMs: 2000, onError: 'closed' }),
});

test('a Guard given a RedisStore and no state keeps its state on the same Redis and prefix, one state per store', () => {
  const store = new RedisStore({ client: io, prefix: fresh(), onError: { insurance: 0.5 } });
  const guard = new Guard({ secret: 'wiring-secret-0123456789', store });
  assert.ok(guard.state instanceof RedisGuardState);
  assert.equal(guard.state, new Guard({ secret: 'wiring-secret-0123456789', store }).state);
  assert.notEqual(
    guard.state,
    new Guard({ secret: 'wiring-secret-0123456789', store: new RedisStore({ client: io, prefix: store.prefix }) })
      .state,
  );
  assert.equal((guard.state as RedisGuardState).prefix, store.prefix);
  assert.equal((guard.state as RedisGuardState).onError, 'local');
  const mine = new MemoryGuardState();
  assert.equal(new Guard({ secret: 'wiring-secret-0123456789', store, state: mine }).state, mine);
});

test('sluice/redis carries no guard code: the guard state is exported from @sluice/guard only', () => {
  assert.deepEqual(
    Object.keys(sluiceRedis).filter((k) => /guard/i.test(k)),
    [],
  );
  assert.equal('guardState' in RedisStore.prototype, false);
});

test('RedisGuardState options: each bad one is an error naming the field and the value', () => {
  const bad: [object, RegExp][] = [
    [{ client: io, prefix: 'a{b}' }, /'prefix' must be .* got "a\{b\}"/],
    [{ client: io, timeoutMs: 0 }, /'timeoutMs' must be a positive number .* got 0/],
    [{ client: io, onError: 'insurance' }, /'onError' must be one of 'open', 'closed', 'local', got "insurance"/],
    [{ client: io, colour: 'red' }, /unknown option 'colour'/],
    [{}, /'client' is required/],
    [{ client: 42 }, /'client' must be an ioredis .* got 42/],
  ];
  for (const [options, message] of bad) assert.throws(() => new RedisGuardState(options as never), message);
});

test('Redis keeps the privacy rule: no plain value in any key or value, and every key expires', async () => {
  const prefix = fresh();
  let now = 1_700_000_123_456;
  const guard = new Guard({
    secret: 'privacy-secret-0123456789',
    store: new RedisStore({ client: io, prefix, clock: 'client', timeoutMs: 2000, onError: 'closed' }),
    clock: () => now,
    random: () => 0,
  });
  await privacyTrace(guard);
  now += 1000;
  const { text, ttls } = await dumpRedis(prefix);
  assert.ok(
    [...ttls.keys()].some((k) => k.includes('{ga:')) && [...ttls.keys()].some((k) => k.includes('{gs:')),
    'account and source records are in Redis',
  );
  assertNoPlainValue(text);
  for (const [key, ttl] of ttls) assert.ok(ttl > 0, `${key} has PTTL ${ttl}`);
});

test('an account and its pairs share one hash tag (one Cluster slot); a source is one key', () => {
  const state = new RedisGuardState({ client: io, prefix: 'p' });
  const tag = (k: string) => k.slice(k.indexOf('{') + 1, k.indexOf('}'));
  assert.equal(tag(state.sourceKey('AbC-_x{y}')), 'gs:AbC-_x\\(y\\)'); // braces inside a tag are escaped, so the tag ends where it should
  assert.equal(state.accountKey('t1'), 'p:{ga:t1}');
  assert.equal(tag(state.pairKey('t1', 'addr')), tag(state.accountKey('t1')));
});

test("anomalyScope 'fleet' on Redis: guards on their own clients and one prefix count each other's failures, in keys that expire", async () => {
  const prefix = fresh();
  const now = 1_700_000_123_456;
  const guardOn = (client: typeof io | typeof nr) =>
    new Guard({
      secret: 'fleet-secret-0123456789',
      store: new RedisStore({ client, prefix, clock: 'client', timeoutMs: 2000, onError: 'closed' }),
      clock: () => now,
      random: () => 0,
      anomalyScope: 'fleet',
      anomalySyncEvery: 0,
    });
  const a = guardOn(io);
  const b = guardOn(nr);
  for (let i = 0; i < 5; i++) await a.record({ account: `a${i}`, ip: `10.0.0.${i + 1}`, success: false });
  for (let i = 0; i < 7; i++) await b.record({ account: `b${i}`, ip: `10.0.1.${i + 1}`, success: false });
  assert.deepEqual([a.failuresThisBucket(), b.failuresThisBucket()], [5, 7], 'each its own before sharing');
  await a.syncAnomaly();
  await b.syncAnomaly();
  await a.syncAnomaly();
  assert.deepEqual([a.failuresThisBucket(), b.failuresThisBucket()], [12, 12]);
  const state = new RedisGuardState({ client: io, prefix });
  for (const [monitor, bucketMs] of [
    ['global', 60_000],
    ['stranger', 3_600_000],
  ] as const) {
    const key = state.failureCountKey(monitor, Math.floor(now / bucketMs));
    assert.equal(await io.get(key), '12', `${monitor}: every failure was from an unfamiliar source`);
    const ttl = await io.pttl(key);
    assert.ok(ttl > 0 && ttl <= 3 * bucketMs, `${key} expires (PTTL ${ttl})`);
  }
});

/** A seeded generator (mulberry32), so a failing run can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

test('differential: random logins through the login port read and answer the same on Redis as on the memory state', async () => {
  const seed = Number(process.env.GUARD_SEED ?? 7);
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  let now = 1_700_000_000_000;
  // Small buckets and sets, so that every limit and cap is met within the run.
  const policy = (name: string, limit: number, window: string) =>
    compilePolicies([{ name, algorithm: 'token-bucket', limit, window }])[0]!;
  const config: LoginConfig = {
    // The long distinct window is read from the same set as the short one, kept for the longer of the two.
    spec: { distinctWindowMs: 60_000, longDistinctWindowMs: 900_000, ratioWindowMs: 300_000, maxDistinct: 4 },
    memoryMs: 900_000,
    familiarMs: 1_200_000,
    maxFamiliar: 2,
    backoff: { freeFailures: 2, baseMs: 1_000, maxMs: 60_000, jitter: 0.5 },
    ip: policy('guard-ip', 6, '1d'),
    subnet: policy('guard-subnet', 9, '1d'),
    pair: policy('guard-pair', 3, '1h'),
    clock: () => now,
  };
  const mem = new MemoryGuardState().loginPort(new MemoryStore(), config);
  // The Redis state keeps the buckets in its own keys, whatever the Guard's store.
  const red = new RedisGuardState({ client: io, prefix: fresh(), timeoutMs: 2000, onError: 'closed' }).loginPort(
    new MemoryStore(),
    config,
  );
  const tagger: AttemptTagger = {
    hasher: new KeyedHasher(new TextEncoder().encode('differential-secret-0123456789')),
    reputation: new Reputation([], [], []),
    ipv4Subnet: 24,
    ipv6Subnet: 64,
    ipv6AddressPrefix: 64,
  };
  const ips = ['10.0.0.1', '10.0.0.2', '10.0.1.7', '2001:db8::1', '2001:db8::2'];
  for (let i = 0; i < 600; i++) {
    now += pick([0, 1, 500, 10_000, 45_000, 200_000, 700_000]);
    // Every argument is drawn before either port runs, so both see the same call.
    const t = tagAttempt(
      'check',
      { account: pick(['a1', 'a2', 'a3']), ip: pick(ips), fingerprint: pick([undefined, 'd1', 'd2']) },
      tagger,
    );
    const op = Math.floor(r() * 5);
    const sources = r() < 0.85;
    const pw = pick(['p1', 'p2', 'p3', 'p4', undefined]);
    const draw = r();
    const run = async (port: LoginPort): Promise<unknown> => {
      switch (op) {
        case 0:
          return readsOf(await port.read(t, now, sources), t);
        case 1:
          await port.refuse(t, now);
          return readsOf(await port.read(t, now, true), t);
        case 2: {
          // As the Guard does: a check, then its success, with the path the check found.
          const reads = await port.read(t, now, true);
          return [readsOf(reads, t), await port.succeed(t, now, judgePath(reads.account, t.sources) === 'familiar')];
        }
        case 3:
          // A success this process did not check: the state judges the path itself.
          return port.succeed(t, now, undefined);
        default:
          return port.fail(t, pw === undefined ? undefined : tagger.hasher.passwordTag(t.account, pw), () => draw, now);
      }
    };
    const m = normalize(await run(mem));
    const d = normalize(await run(red));
    assert.deepEqual(d, m, `seed ${seed}, step ${i}, op ${op}`);
  }
});

/**
 * A check's reads as the Guard takes them (a familiar source's per-source reads are ignored: the Redis port
 * reads them anyway), as plain data now: the memory state's account view is its live record, which a
 * success then changes.
 */
function readsOf(reads: LoginReads, t: TaggedAttempt): unknown {
  const familiar = judgePath(reads.account, t.sources) === 'familiar';
  const decision = (d: Decision | undefined) =>
    d === undefined
      ? undefined
      : { allowed: d.allowed, remaining: d.remaining, resetAfterMs: d.resetAfterMs, retryAfterMs: d.retryAfterMs };
  return normalize({
    account: reads.account,
    pair: decision(reads.pair),
    ...(familiar
      ? {}
      : {
          ip: decision(reads.ip),
          subnet: decision(reads.subnet),
          ipSource: reads.ipSource,
          netSource: reads.netSource,
          fingerprintSource: reads.fingerprintSource,
        }),
  });
}

/** Answers as plain data, with fractional counts rounded (Redis returns the same numbers through Lua doubles). */
function normalize(v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return Math.round(v * 1e6) / 1e6;
  if (Array.isArray(v)) return v.map(normalize);
  if (typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v))
    if (!['failuresUntil', 'expiresAt', 'passwords', 'familiarUntil'].includes(k)) out[k] = normalize(x);
  return out;
}

test("the script packs an AC success's fields into the record the app computed, when the record is still the one read", async () => {
  // The script alone, on a record set here: were the compare (SHA1 of the record read) never to match,
  // every success would fall back to the script's own work and the differential tests would not notice.
  const day = 86_400_000;
  const key = `${fresh()}:{ga:acct}`;
  const read = packSuccess(succeededAccount(null, 1_700_000_000_000.5, ['AAAAAAAA', 'BBBBBBBB'], 30 * day, 8));
  const now = 1_700_000_000_000.5 + day + 0.25;
  const done = succeededAccount(read, now, ['CCCCCCCC', 'AAAAAAAA'], 30 * day, 8);
  assert.equal(done.judged.path, 'familiar');
  assert.equal(done.familiar, 'CCCCCCCC,AAAAAAAA,BBBBBBBB');
  await io.set(key, read, 'PX', 60_000);
  const connection = new RedisConnection({ client: io, timeoutMs: 2000, owner: 'test' });
  // No sessions; a T operation for the time; the AC operation, no pair key, no tags.
  const reply = await connection.run(
    GUARD_SCRIPT,
    [key],
    ['0', 'T', '1', String(now), '0', 'AC', ...successArgs(read, done), '0', '0'],
  );
  assert.deepEqual(reply, ['f', 0]);
  assert.equal((await io.getBuffer(key))!.toString('hex'), packSuccess(done).toString('hex'));
  const ttl = await io.pttl(key);
  assert.ok(ttl > done.ttlMs - 5000 && ttl <= done.ttlMs, `PX ${done.ttlMs}, got ${ttl}`);
});

test("a success computed in the app and packed by the script (AC) leaves the same bytes as the script's own success (AS)", async () => {
  // Two guards on two prefixes, the same logins at the same times: one checks each login first, so its
  // successes are computed in the app (a first one created whole by SET NX, later ones packed by the
  // script from the fields sent); the other only records, so the script does each success itself. Were
  // a field sent or packed wrong, the records would differ.
  let now = 1_700_000_123_456.5;
  const options = { secret: 'ac-as-secret-0123456789abcdef', clock: () => now, random: () => 0.5 };
  const [app, script] = [fresh(), fresh()];
  const checked = new Guard({ ...options, store: new RedisStore({ client: io, prefix: app, onError: 'closed' }) });
  const recorded = new Guard({ ...options, store: new RedisStore({ client: io, prefix: script, onError: 'closed' }) });
  const logins = [
    { account: 'ann', ip: '203.0.113.1', success: true },
    { account: 'ann', ip: '203.0.113.1', success: false, password: 'typo' },
    { account: 'ann', ip: '203.0.113.1', success: true },
    { account: 'ann', ip: '198.51.100.2', success: true },
    { account: 'ann', ip: '203.0.113.1', fingerprint: 'laptop', success: true },
    { account: 'ben', ip: '198.51.100.3', success: false, password: 'x' },
    { account: 'ben', ip: '198.51.100.3', success: true },
  ];
  for (const l of logins) {
    now += 60_000.25;
    await checked.check(l);
    assert.deepEqual(await checked.record(l), await recorded.record(l), JSON.stringify(l));
  }
  const values = async (prefix: string) => {
    const out = new Map<string, string>();
    for (const k of await io.keys(`${prefix}:*`))
      out.set(k.slice(prefix.length), (await io.getBuffer(k))!.toString('hex'));
    return out;
  };
  const [a, b] = [await values(app), await values(script)];
  const accounts = [...a.keys()].filter((k) => k.startsWith(':{ga:') && !k.includes(':p:'));
  assert.equal(accounts.length, 2, 'two accounts');
  for (const k of accounts) assert.equal(a.get(k), b.get(k), k);
});
