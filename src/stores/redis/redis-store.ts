/**
 * RedisStore: sluice's distributed store. Every algorithm runs as one Lua script on Redis time, batched
 * across concurrent calls, with an explicit failure policy. See the README, "Redis".
 *
 * @example
 * import Redis from 'ioredis';
 * import { Limiter } from 'sluice';
 * import { RedisStore } from 'sluice/redis';
 * const store = new RedisStore({ client: new Redis(), prefix: 'sluice', timeoutMs: 50, onError: 'open' });
 * const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1m' }, store });
 */
import { SluiceError, show } from '../../core/index.js';
import type { ScriptRunner } from '../script-runner.js';
import type { Store, TableSpec } from '../store.js';
import { RedisConnection } from './connection.js';
import { checkOnError, type OnError } from './failure.js';
import { scriptRunner } from './strategy.js';
import { RedisTable, type RedisStoreStats, type StoreContext } from './table.js';

export interface RedisStoreOptions {
  /** An ioredis Redis or Cluster, or a node-redis (v4 or later) client or cluster, connected by you. */
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
  /** Most script calls awaiting an answer; beyond it calls fail fast instead of queueing. Default 1024. */
  maxInFlight?: number;
}

const KNOWN = new Set(['client', 'prefix', 'timeoutMs', 'onError', 'clock', 'maxBatch', 'maxInFlight']);

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisStore ${message}`);
}

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) invalid(`'${field}' must be a positive integer, got ${show(value)}`);
  return value;
}

export class RedisStore implements Store {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly onError: OnError;
  /** Counters for metrics: calls, operations, fallbacks (outage answers), timeouts, errors, refusals. */
  readonly stats: RedisStoreStats = { calls: 0, operations: 0, fallbacks: 0, timeouts: 0, errors: 0, refused: 0, reloads: 0 };
  /** The client this store was given: features that keep their own state on the same Redis (the guard's) use it. */
  readonly client: unknown;
  private readonly ctx: StoreContext;

  constructor(options: RedisStoreOptions) {
    if (typeof options !== 'object' || options === null) invalid(`options must be an object such as { client }, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (!KNOWN.has(field)) invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
    }
    if (options.client === undefined) invalid(`'client' is required: an ioredis or node-redis client`);
    const prefix = options.prefix ?? 'sluice';
    if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
      invalid(`'prefix' must be a non-empty string without '{' or '}' (the identity is the key's hash tag), got ${show(prefix)}`);
    }
    const timeoutMs = options.timeoutMs ?? 50;
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) invalid(`'timeoutMs' must be a positive number of milliseconds, got ${show(timeoutMs)}`);
    const onError = checkOnError(options.onError ?? 'open');
    const clock = options.clock ?? 'server';
    if (clock !== 'server' && clock !== 'client') invalid(`'clock' must be 'server' or 'client', got ${show(clock)}`);
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.onError = onError;
    this.client = options.client;
    const maxBatch = positiveInteger('maxBatch', options.maxBatch, 64);
    const maxInFlight = positiveInteger('maxInFlight', options.maxInFlight, 1024);
    const connection = new RedisConnection({ client: options.client, timeoutMs, maxInFlight, owner: 'RedisStore', stats: this.stats });
    this.ctx = { connection, prefix, onError, clientClock: clock === 'client', maxBatch, stats: this.stats };
  }

  bind(spec: TableSpec): RedisTable {
    return new RedisTable(this.ctx, spec);
  }

  /** For the 'lease' and 'local-sync' strategies: runs their scripts with this store's client and options. */
  runner(spec: TableSpec): ScriptRunner {
    return scriptRunner(this.ctx, spec);
  }
}
