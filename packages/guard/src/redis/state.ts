/**
 * RedisGuardState: the login guard's state (src/guard/state.ts) on Redis, so every app server sees every
 * other's failures. Every operation joins a batch: what the guards on this state ask in one turn of the
 * event loop goes to Redis together, its reads as one MGET decoded here (records.ts) and its writes as
 * script calls (guard.lua, beside this file), one per hash slot on a Cluster, by the kit's turn batcher
 * (TurnBatch, as RedisStore's tables) through the kit's connection (RedisConnection: deadlines, the
 * in-flight bound, the failure policy's answers).
 *
 * A Guard on a RedisStore also runs its logins through a LoginSession (login.ts): a check is one read and
 * a record one script operation (a first login's success one SET NX), carrying the account, pair, address,
 * subnet and fingerprint work with the guard's token buckets, which then live in the same keys.
 *
 * It lives in the guard, not beside RedisStore: the store knows nothing of the guard (sluice/redis carries
 * no guard code), and a Guard given a RedisStore builds this state on the store's client (redisGuardStateOf).
 *
 * @example
 * const store = new RedisStore({ client: new Redis() });
 * const guard = new Guard({ secret, store }); // buckets and state both on Redis, one state per store
 */
import { readFileSync } from 'node:fs';
import {
  checkRedisBasics,
  checkReporting,
  connectionStats,
  type ConnectionStats,
  defineLibrary,
  escapeId,
  type LibraryScript,
  luaSource,
  check,
  type OnError,
  redisCommand,
  RedisConnection,
  RedisStore,
  type RedisStoreListener,
  slotOf,
  type Store,
  type StoreLogger,
  TurnBatch,
} from 'sluice/kit';
import type { MemoryRecords } from '../memory-records.js';
import { MemoryGuardState } from '../memory-state.js';
import type { GuardState, LoginConfig, LoginPort } from '../state.js';
import { LoginSession, type LoginHost } from './login.js';
import { withOffline } from './offline.js';
import { num, type LoginContext, type ReadUnit, type Unit } from './wire.js';

/**
 * When Redis cannot answer within timeoutMs (down, frozen, not connected):
 * - 'open': reads find nothing (the guard judges the attempt as if the account and its sources were new:
 *   the buckets, reputation lists and the anomaly monitor still apply) and writes are dropped.
 * - 'closed': every call rejects with ERR_SLUICE_STORE_UNAVAILABLE, so check() and record() reject and
 *   the app's error path answers (no login is judged without the shared state).
 * - 'local': this process keeps its own MemoryGuardState meanwhile and uses it until Redis answers again.
 */
export type GuardStateOnError = 'open' | 'closed' | 'local';

export interface RedisGuardStateOptions {
  /** Told of the client's trouble, as RedisStore's `onEvent` (docs/redis.md, "Store trouble"). */
  onEvent?: RedisStoreListener;
  /** Where the outage and recovery lines go, as RedisStore's `logger`; false for nowhere. Default: stderr. */
  logger?: StoreLogger | false;
  /** An ioredis or iovalkey Redis or Cluster, a node-redis (v4 or later) client or cluster, or a valkey-glide GlideClient or GlideClusterClient, connected by you. */
  client: unknown;
  /** Start of every key: `<prefix>:{ga:<account tag>}[:p:<address tag>]`, `<prefix>:{gs:<source tag>}:v2`. No braces. Default 'sluice'. */
  prefix?: string;
  /** Longest wait for Redis per call before `onError` answers. Default 50 ms. */
  timeoutMs?: number;
  /** What the state does when Redis cannot answer. Default 'open'. */
  onError?: GuardStateOnError;
  /**
   * Most records of accounts and sources that never succeeded (what an attacker can make the guard keep)
   * this app server keeps on Redis under a flood: made faster than this per their lifetime, each lives
   * maxRecords / rate, at least the short distinct-accounts window (budget.ts). Default 1,000,000.
   */
  maxRecords?: number;
}

/** The connection's counters (`operations`: logins' checks and records, and single state calls, carried by `calls`), and: */
export interface RedisGuardStateStats extends ConnectionStats {
  /** Operations answered by `onError`: their call timed out, failed, or was refused because the client was not ready. */
  fallbacks: number;
}

const KNOWN = new Set(['client', 'prefix', 'timeoutMs', 'onError', 'onEvent', 'logger', 'maxRecords']);

/** What the guard does while Redis cannot answer, for the outage line. */
function meanwhile(onError: GuardStateOnError): string {
  if (onError === 'closed') return "the login guard's check() and record() reject (onError 'closed')";
  if (onError === 'local')
    return "the login guard judges attempts on this process's own records, and its verdicts carry reason 'store-error'";
  return "the login guard judges every attempt as a new account from a new address (onError 'open'), and its verdicts carry reason 'store-error'";
}
/**
 * Most operations per script call; a login's operations are never split. On a standalone Redis a call
 * leaves as soon as it is full, not at the end of the turn: Redis runs it while the client builds the
 * next, and answers it while the client reads other answers, rather than the two taking turns on one
 * turn's whole batch. It also keeps one call from holding Redis long.
 */
export const MAX_OPERATIONS = 16;
/** Most keys per read (MGET) of a batch: a turn's reads go as several beyond it, each as soon as it is full. */
export const MAX_READ_KEYS = 256;
/** Most calls awaiting an answer, as RedisStore's default: beyond it calls fail fast instead of queueing. */
const MAX_IN_FLIGHT = 1024;

/** A turn's reads: the records' values, as the bytes they were packed to (records.ts decodes them). */
const READ_RECORDS = redisCommand('MGET', { readonly: true, bytes: true });
/** A first login's record, written only if there is none: `SET key value PX ttl NX`. */
const CREATE_RECORD = redisCommand('SET');

/**
 * The store's prelude and token bucket (the guard's buckets are the limiter's token bucket), then the guard's
 * operations. The URL is written out whole, so that a bundler (Next.js's Turbopack, webpack) copies the file.
 */
export const GUARD_SCRIPT: LibraryScript = defineLibrary(
  'guard',
  [luaSource('prelude'), luaSource('token-bucket'), readFileSync(new URL('./guard.lua', import.meta.url), 'utf8')].join(
    '\n',
  ),
);

export class RedisGuardState implements GuardState, LoginHost {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly onError: GuardStateOnError;
  readonly maxRecords: number;
  readonly stats: RedisGuardStateStats = { ...connectionStats(), fallbacks: 0 };
  /** The client this state was given. */
  readonly client: unknown;
  /** Whether the client is a cluster (each call then goes to one slot). */
  readonly cluster: boolean;
  private readonly connection: RedisConnection;
  private local: MemoryGuardState | undefined;
  /** This turn's script operations: calls of at most MAX_OPERATIONS, one slot each on a Cluster. */
  private readonly units: TurnBatch<Unit>;
  /** This turn's reads: MGETs of at most MAX_READ_KEYS keys, one slot each on a Cluster. */
  private readonly reads: TurnBatch<ReadUnit>;
  /** The constants of every LoginSession on this state, sent at the start of each call that has login operations. */
  private readonly sessions: string[][] = [];

  constructor(options: RedisGuardStateOptions) {
    const { prefix, timeoutMs } = checkRedisBasics('RedisGuardState', options, KNOWN);
    const onError = check.oneOf(options.onError ?? 'open', ['open', 'closed', 'local'], "RedisGuardState 'onError'");
    const report = { ...checkReporting('RedisGuardState', options), meanwhile: meanwhile(onError) };
    this.connection = new RedisConnection({
      client: options.client,
      timeoutMs,
      maxInFlight: MAX_IN_FLIGHT,
      owner: 'RedisGuardState',
      stats: this.stats,
      report,
    });
    this.client = options.client;
    this.cluster = this.connection.cluster;
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.onError = onError;
    this.maxRecords = check.positiveInteger(options.maxRecords ?? 1_000_000, "RedisGuardState 'maxRecords'");
    const writeNow = () => this.connection.writeNow();
    this.units = new TurnBatch<Unit>({
      cluster: this.cluster,
      max: MAX_OPERATIONS,
      eager: true,
      writeNow,
      send: (units) => this.send(units),
    });
    this.reads = new TurnBatch<ReadUnit>({
      cluster: this.cluster,
      max: MAX_READ_KEYS,
      weigh: (read) => read.keys.length,
      eager: true,
      writeNow,
      send: (reads) => this.sendReads(reads),
    });
  }

  /** The key of an account's record; exported for tests and audits (`redis-cli --scan`). */
  accountKey(account: string): string {
    return `${this.prefix}:{ga:${escapeId(account)}}`;
  }

  /** The key of an account+address pair's bucket: in the account's slot. */
  pairKey(account: string, address: string): string {
    return `${this.prefix}:{ga:${escapeId(account)}}:p:${address}`;
  }

  /** The key of a source's record (an address's or subnet's with its bucket): one key, one slot. */
  sourceKey(source: string): string {
    // v2: failed accounts as 32-bit hashes; records of the layout before (their tags as text) are not read,
    // and expire on their own TTLs.
    return `${this.prefix}:{gs:${escapeId(source)}}:v2`;
  }

  /** The key of a monitor's failure count in one anomaly bucket: one hash tag per monitor, one slot. */
  failureCountKey(monitor: string, bucket: number): string {
    return `${this.prefix}:{gf:${escapeId(monitor)}}:${num(bucket)}`;
  }

  /** The key of the anomaly monitors' persisted baselines: one for the fleet. */
  baselinesKey(): string {
    return `${this.prefix}:{gb:baselines}`;
  }

  /** The cluster slot of `<prefix>:{<kind>:<tag>}` (0 on a standalone Redis, where every call may mix slots). */
  slot(kind: 'ga' | 'gs' | 'gf' | 'gb', tag: string): number {
    return this.cluster ? slotOf(`${kind}:${escapeId(tag)}`) : 0;
  }

  /**
   * The fleet's persisted monitor baselines, in whatever call goes next. As shareFailures, no failure
   * policy: it rejects, and the guard starts without them.
   */
  readBaselines(): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      this.enqueue({
        slot: this.slot('gb', 'baselines'),
        keys: [this.baselinesKey()],
        args: ['RB'],
        context: undefined,
        answer: (r, i) => {
          const v = r[i];
          resolve(typeof v === 'string' && v.length > 0 ? v : undefined);
          return i + 1;
        },
        fail: reject,
      });
    });
  }

  /** Replaces the fleet's persisted baselines, kept `ttlMs`. */
  writeBaselines(baselines: string, ttlMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.enqueue({
        slot: this.slot('gb', 'baselines'),
        keys: [this.baselinesKey()],
        args: ['WB', num(Math.ceil(ttlMs)), baselines],
        context: undefined,
        answer: (_r, i) => {
          resolve();
          return i + 1;
        },
        fail: reject,
      });
    });
  }

  /**
   * Adds to and reads the fleet's failure counts (one operation for every bucket given), in whatever call
   * goes next. Unlike the account and source operations it has no failure policy of its own: it rejects,
   * and the guard keeps what it could not share for the next time, deciding meanwhile on its own count
   * and the last shared one.
   */
  shareFailures(
    monitor: string,
    adds: readonly (readonly [bucket: number, count: number])[],
    ttlMs: number,
  ): Promise<number[]> {
    if (adds.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.enqueue({
        slot: this.slot('gf', monitor),
        keys: adds.map(([bucket]) => this.failureCountKey(monitor, bucket)),
        args: ['SF', num(Math.ceil(ttlMs)), String(adds.length), ...adds.map(([, count]) => num(count))],
        context: undefined,
        answer: (r, i) => {
          resolve(r.slice(i, i + adds.length).map(Number));
          return i + adds.length;
        },
        fail: reject,
      });
    });
  }

  /**
   * The constants a LoginSession sends with its operations, its signature first; returns the session's
   * number. Called once per Guard (login.ts).
   */
  addSession(constants: string[]): number {
    // Guards with the same options share one (a Guard made per request must not grow every call).
    const at = this.sessions.findIndex((c) => c[0] === constants[0]);
    if (at >= 0) return at + 1;
    this.sessions.push(constants);
    return this.sessions.length;
  }

  /**
   * A Guard's whole-login operations (login.ts): the guard's buckets live in this state's keys, beside the
   * account and sources they go with, whatever `store` is. While Redis cannot answer, the offline state
   * answers (offline.ts), its buckets by the failure policy of `store` when it is the RedisStore this state
   * was made for (redisGuardStateOf), else by this state's `onError`.
   */
  loginPort(store: Store, config: LoginConfig): LoginPort {
    const onError: OnError =
      store instanceof RedisStore && perStore.get(store) === this
        ? storeBucketsOnError(store.onError)
        : bucketsOnError(this.onError);
    return withOffline(new LoginSession(this, config), this.offline(), onError, config);
  }

  /** What answers for Redis while it cannot: this process's own state ('local'), or nothing known ('open'); none when 'closed'. */
  private offline(): MemoryRecords | 'open' | undefined {
    if (this.onError === 'local') return (this.local ??= new MemoryGuardState()).records;
    return this.onError === 'open' ? 'open' : undefined;
  }

  /**
   * Adds one operation to the batch going out at the end of this turn of the event loop, or at once
   * when it fills a call on a standalone Redis (see MAX_OPERATIONS; on a Cluster a turn's operations are
   * grouped by slot first).
   */
  enqueue(unit: Unit): void {
    this.units.add(unit);
  }

  /**
   * Creates `key` with `value` (a record's bytes) for `ttlMs` if it is absent: one SET NX, sent now and
   * written with the rest of the turn; true when created. Not batched: a plain command costs Redis less
   * than its share of a script call.
   */
  create(key: string, value: Uint8Array, ttlMs: number): Promise<boolean> {
    return this.connection.run(CREATE_RECORD, [key], [value, 'PX', String(ttlMs), 'NX']).then(created);
  }

  /**
   * Adds one read to the batch going out at the end of this turn of the event loop (as enqueue; a read's
   * keys are never split between MGETs). Nothing in one turn waits on another operation of the same
   * turn: a login's check and its record are never in one.
   */
  enqueueRead(unit: ReadUnit): void {
    this.reads.add(unit);
  }

  /** One MGET of the reads' keys. */
  private sendReads(reads: ReadUnit[]): void {
    const keys: string[] = [];
    for (const unit of reads) for (const k of unit.keys) keys.push(k);
    this.connection.send(READ_RECORDS, keys, NO_ARGS, answerReads, reads, reads.length);
  }

  private send(units: Unit[]): void {
    const keys: string[] = [];
    let sessions = false;
    for (const u of units) {
      for (const k of u.keys) keys.push(k);
      if (u.context !== undefined) sessions = true;
    }
    const args: string[] = [sessions ? String(this.sessions.length) : '0'];
    if (sessions) for (const s of this.sessions) for (const a of s) args.push(a);
    // A turn's logins mostly share one session and one coarse `now`: a T operation sets them for the
    // operations that follow, sent only where they change.
    let context: LoginContext | undefined;
    for (const u of units) {
      const c = u.context;
      if (
        c !== undefined &&
        (context === undefined || c.session !== context.session || c.now !== context.now || c.cap !== context.cap)
      ) {
        args.push('T', c.session, c.now, c.cap);
        context = c;
      }
      for (const a of u.args) args.push(a);
    }
    this.connection.send(GUARD_SCRIPT, keys, args, answerAll, units, units.length);
  }
}

const NO_ARGS: string[] = [];

/** SET NX's reply: OK when it set the key, nil when the key was there. */
const created = (reply: unknown): boolean => reply === 'OK';

/** The Done of every read: each unit reads its values in turn; all fail together. */
function answerReads(units: ReadUnit[], reply: unknown, failed: boolean, err: unknown): void {
  if (!failed) {
    try {
      const values = reply as (Uint8Array | null)[];
      let i = 0;
      for (const u of units) i = u.answer(values, i);
      if (i !== values.length) throw new Error(`sluice internal: MGET replied ${values.length} values, read ${i}`);
      return;
    } catch (e) {
      err = e;
    }
  }
  for (const u of units) u.fail(err);
}

/** The Done of every call: each unit reads its part of the reply in turn; all fail together. */
function answerAll(units: Unit[], reply: unknown, failed: boolean, err: unknown): void {
  if (!failed) {
    try {
      const r = reply as unknown[];
      let i = 0;
      for (const u of units) i = u.answer(r, i);
      if (i !== r.length) throw new Error(`sluice internal: guard script replied ${r.length} values, read ${i}`);
      return;
    } catch (e) {
      err = e;
    }
  }
  for (const u of units) u.fail(err);
}

/** One state per store, so every Guard given the same RedisStore shares one (as its buckets do). */
const perStore = new WeakMap<RedisStore, RedisGuardState>();

/**
 * The guard state on a RedisStore's client, prefix and timeout, telling its trouble through the store's
 * `onEvent` and `logger`, or undefined if `store` is not a RedisStore. Its onError follows the store's:
 * 'closed' rejects; 'open' and insurance keep this process's own records while Redis is away (see
 * stateOnError). A Guard given a RedisStore and no `state` takes this one.
 */
export function redisGuardStateOf(store: unknown): RedisGuardState | undefined {
  if (!(store instanceof RedisStore)) return undefined;
  let state = perStore.get(store);
  if (state === undefined) {
    const { onEvent, logger } = store.reporting;
    state = new RedisGuardState({
      client: store.client,
      prefix: store.prefix,
      timeoutMs: store.timeoutMs,
      onError: stateOnError(store.onError),
      ...(onEvent === undefined ? {} : { onEvent }),
      ...(logger === undefined ? {} : { logger }),
    });
    perStore.set(store, state);
  }
  return state;
}

/**
 * The guard's state for a store's onError. 'open' is the store's promise to admit requests while Redis is
 * away; for a login that is kept by 'local' too (no attempt is refused for the outage), which also keeps
 * counting each account's failures in this process, so a Redis that is down (or a REDIS_URL that is
 * wrong) does not turn the account backoff and the hard stop off.
 */
export function stateOnError(onError: OnError): GuardStateOnError {
  return onError === 'closed' ? 'closed' : 'local';
}

/** The guard's buckets while Redis is away, for a store's onError: 'open' keeps them in this process too. */
function storeBucketsOnError(onError: OnError): OnError {
  return onError === 'open' ? { insurance: 1 } : onError;
}

/** The buckets' failure policy for a state's own onError: 'local' keeps them in this process, whole. */
function bucketsOnError(onError: GuardStateOnError): OnError {
  return onError === 'local' ? { insurance: 1 } : onError;
}
