/**
 * RedisStore: sluice's distributed store. Every algorithm runs as one Lua script on Redis time, batched
 * across concurrent calls, with an explicit failure policy. See docs/redis.md.
 *
 * @example
 * import Redis from 'ioredis';
 * import { Limiter } from 'sluice';
 * import { RedisStore } from 'sluice/redis';
 * const store = new RedisStore({ client: new Redis(), prefix: 'sluice', timeoutMs: 50, onError: 'open' });
 * const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1m' }, store });
 */
import { brandOf, isInstance, SLUICE_VERSION } from '../../core/brand.js';
import { check } from '../../core/option-checks.js';
import type { ScriptRunner } from '../script-runner.js';
import type { Store, TableSpec } from '../store.js';
import { CONNECT_TIMEOUT_MS, connectionStats, RedisConnection } from './connection.js';
import { checkRedisBasics } from './options.js';
import { checkOnError, type OnError } from './failure.js';
import { checkReporting, type HealthReport, type RedisStoreListener, type StoreLogger } from './health.js';
import { PeerConnections } from './peers.js';
import { scriptRunner } from './strategy.js';
import { RedisTable, type RedisStoreStats, type StoreContext } from './table.js';

export interface RedisStoreOptions {
  /**
   * An ioredis or iovalkey Redis or Cluster, a node-redis (v4 or later) client or cluster, or a
   * valkey-glide GlideClient or GlideClusterClient. It need not be connected yet: calls wait for its
   * first connection (see connectTimeoutMs).
   */
  client: unknown;
  /** Start of every key: `<prefix>:{<id>}:<policy>`. No braces. Default 'sluice'. */
  prefix?: string;
  /** Longest wait for Redis per call before the failure policy answers. Default 50 ms. */
  timeoutMs?: number;
  /** When Redis cannot answer: allow, deny, or decide on a local limiter with this node's share. Default 'open'. */
  onError?: OnError;
  /**
   * Whose time the scripts use. 'server' (default) reads Redis TIME, so app servers' clocks never matter.
   * 'client' sends the limiter's clock with every call: for tests that inject a clock, not for production.
   */
  clock?: 'server' | 'client';
  /** Most operations per script call. Default 64. */
  maxBatch?: number;
  /** Most script calls awaiting an answer (or the first connection); beyond it calls fail fast instead of queueing. Default 1024. */
  maxInFlight?: number;
  /**
   * How long calls wait for the client's first connection, counted from the store's creation: until then
   * they are held and sent as soon as the client is ready; after it (and after any later disconnect) the
   * failure policy answers at once. Default 2000 ms.
   */
  connectTimeoutMs?: number;
  /**
   * Told of store trouble and of what the server says of itself: no connection by connectTimeoutMs, a lost
   * connection or unanswered calls and the recovery, an eviction policy that can drop limiter keys, a
   * restarted or failed-over server. See health.ts and docs/redis.md, "Store trouble". Only transitions
   * are reported, one event per outage and one at its end, never one per call.
   */
  onEvent?: RedisStoreListener;
  /**
   * Where the outage, the recovery and the server's warnings are written as lines: console, a pino or
   * winston logger; false for nowhere. Default: one line on stderr each, unless a part on the same client
   * has an `onEvent` or a `logger`.
   */
  logger?: StoreLogger | false;
  /**
   * One limit across regions: this store is one region's home, and `regions` names it and its peers'
   * Redis clients; limiters on it then use the 'regions' strategy. Checked when a limiter binds it.
   * See docs/distributed.md, "Regions".
   */
  regions?: unknown;
}

const KNOWN = new Set([
  'client',
  'prefix',
  'timeoutMs',
  'onError',
  'clock',
  'maxBatch',
  'maxInFlight',
  'connectTimeoutMs',
  'onEvent',
  'logger',
  'regions',
]);

/** What a RedisStore answers while Redis cannot, for the outage line. */
function meanwhile(onError: OnError): string {
  if (onError === 'open')
    return "RedisStore allows every request (onError 'open'; decisions carry reason 'store-error')";
  if (onError === 'closed') return "RedisStore denies every request (onError 'closed')";
  return `RedisStore decides on this process's share (${onError.insurance}) of each limit (onError insurance)`;
}

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  return check.positiveInteger(value, `RedisStore '${field}'`);
}

const REDIS_STORE = brandOf('RedisStore');

export class RedisStore implements Store {
  /** One from another copy of sluice (require and import each load one) of this release is a RedisStore too. */
  static [Symbol.hasInstance](x: unknown): boolean {
    return isInstance(this, RedisStore, REDIS_STORE, x);
  }

  get [REDIS_STORE](): string {
    return SLUICE_VERSION;
  }

  readonly prefix: string;
  readonly timeoutMs: number;
  readonly onError: OnError;
  /** Counters for metrics: calls, operations, fallbacks (outage answers), timeouts, errors, late replies, refusals, reloads. */
  readonly stats: RedisStoreStats = { ...connectionStats(), fallbacks: 0 };
  /** The client this store was given: features that keep their own state on the same Redis (the guard's) use it. */
  readonly client: unknown;
  /** The `regions` option as given (the regions strategy checks it), undefined without. */
  readonly regions: unknown;
  private readonly peers: PeerConnections | undefined;
  private readonly ctx: StoreContext;

  constructor(options: RedisStoreOptions) {
    const { prefix, timeoutMs } = checkRedisBasics('RedisStore', options, KNOWN);
    const onError = checkOnError(options.onError ?? 'open');
    const clock = options.clock ?? 'server';
    check.oneOf(clock, ['server', 'client'], "RedisStore 'clock'");
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.onError = onError;
    this.client = options.client;
    const maxBatch = positiveInteger('maxBatch', options.maxBatch, 64);
    const maxInFlight = positiveInteger('maxInFlight', options.maxInFlight, 1024);
    const connectTimeoutMs = check.nonNegativeNumber(
      options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      "RedisStore 'connectTimeoutMs'",
      { unit: 'milliseconds' },
    );
    const report = { ...checkReporting('RedisStore', options), meanwhile: meanwhile(onError) };
    this.reporting = report;
    const connection = new RedisConnection({
      client: options.client,
      timeoutMs,
      connectTimeoutMs,
      maxInFlight,
      owner: 'RedisStore',
      stats: this.stats,
      report,
    });
    this.ctx = { connection, prefix, onError, clientClock: clock === 'client', maxBatch, stats: this.stats };
    this.regions = options.regions;
    this.peers = options.regions === undefined ? undefined : new PeerConnections(report);
  }

  /** The store's `onEvent` and `logger`, for the parts built on it (the guard's state on this store tells through them). */
  readonly reporting: HealthReport;

  /**
   * The outage under way on this store's client, if any: its cause and how long it has lasted (an error
   * message can name it). Undefined while Redis answers.
   */
  outage(): { readonly cause: string; readonly downMs: number } | undefined {
    return this.ctx.connection.health.outage();
  }

  /**
   * Resolves once the client is connected (at once if it is), for a server that holds its start-up until
   * Redis answers; rejects with ERR_SLUICE_STORE_UNAVAILABLE if it is not within `timeoutMs` (default
   * connectTimeoutMs). Decisions need no such wait: they wait for the first connection themselves.
   */
  ready(timeoutMs?: number): Promise<void> {
    try {
      if (timeoutMs !== undefined)
        check.nonNegativeNumber(timeoutMs, "RedisStore ready() 'timeoutMs'", { unit: 'milliseconds' });
    } catch (error) {
      return Promise.reject(error);
    }
    return this.ctx.connection.whenReady(timeoutMs);
  }

  bind(spec: TableSpec): RedisTable {
    return new RedisTable(this.ctx, spec);
  }

  /** For the 'lease' and 'local-sync' strategies: runs their scripts with this store's client and options. */
  runner(spec: TableSpec): ScriptRunner {
    return scriptRunner(this.ctx, spec, this.peers);
  }
}
