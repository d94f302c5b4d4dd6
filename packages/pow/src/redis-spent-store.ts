/**
 * Spent store on Redis: one script call per redemption, atomic across every server sharing the Redis,
 * through the Redis connection layer (src/stores/redis/connection.ts: a deadline per call, and the
 * client's trouble told once per outage). The client is duck-typed, so no Redis client is a dependency.
 *
 * Expiry is Redis's to judge, not each server's: the script reads Redis TIME, refuses a token already
 * expired by it, and keeps the spent key until the token's expiry on that same clock, so servers whose
 * clocks disagree cannot shorten it. A Redis that lost its keys (a restart without persistence, a flush)
 * would forget spent tokens: an epoch key, set (if absent) at each connection of the client and by any
 * spend that finds none, refuses every token that could have been issued before it (one that expires
 * sooner than `maxTtlMs` after the epoch, less EPOCH_GRACE_MS for the token issued as the epoch is set).
 */
import {
  adapt,
  checkReporting,
  dialectOf,
  RedisConnection,
  type RedisDialect,
  type RedisSetClient,
  type RedisStoreListener,
  type Script,
  check,
  show,
  SluiceError,
  type StoreLogger,
} from 'sluice/kit';
import type { SpendResult, SpentStore } from './spent-store.js';

/** Kept for code that named the types of the store before it ran a script. */
export type { RedisDialect, RedisSetClient };

export interface RedisSpentStoreOptions {
  /** An ioredis or iovalkey client or Cluster, a node-redis client or cluster, or a valkey-glide client. */
  client: unknown;
  /** Key prefix, without braces (the keys' hash tag follows it). Default 'sluice:pow:spent:'. */
  prefix?: string;
  /** Longest wait for Redis per redemption; then spend() rejects with ERR_SLUICE_STORE_UNAVAILABLE. Default 50 ms. */
  timeoutMs?: number;
  /**
   * The longest `ttlMs` your challenges have (createChallenge's default is 60 s). After Redis lost its keys,
   * tokens expiring sooner than this after the loss was noticed are refused: they could have been redeemed
   * before it. Default 60,000.
   */
  maxTtlMs?: number;
  /** Told of the client's trouble, as RedisStore's `onEvent`. */
  onEvent?: RedisStoreListener;
  /** Where the outage and recovery lines go, as RedisStore's `logger`; false for nowhere. Default: stderr. */
  logger?: StoreLogger | false;
}

const KNOWN = new Set(['client', 'prefix', 'timeoutMs', 'maxTtlMs', 'onEvent', 'logger']);

/**
 * KEYS: the spent key, the epoch key (one hash tag: one slot on a Cluster). ARGV: the token's expiry (ms
 * since the epoch, as signed), maxTtlMs. Replies 1 spent now, 0 spent already, 2 expired by Redis's clock,
 * 3 possibly issued before Redis lost its keys.
 */
export const SPEND: Script = {
  name: 'pow-spend',
  // SHA1 of the source, written out: @sluice/pow loads in Workers, without node:crypto (a test checks it).
  sha: '624099c11668a369ea966178abc2eea7637ff4d3',
  source: `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires = tonumber(ARGV[1])
if now >= expires then return 2 end
local epoch = tonumber(redis.call('GET', KEYS[2]) or '')
if not epoch then
  epoch = now
  redis.call('SET', KEYS[2], string.format('%d', now))
end
if expires < epoch + tonumber(ARGV[2]) then return 3 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', string.format('%d', expires - now)) then return 1 end
return 0`,
};

/** KEYS: the epoch key. Sets it to Redis's now unless it is there: at each connection, before any token is spent. */
export const EPOCH: Script = {
  name: 'pow-epoch',
  sha: '6cd61f8fe53ce1ffde0390f4cd44553a9e2a3ce1',
  source: `local t = redis.call('TIME')
redis.call('SET', KEYS[1], string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)), 'NX')
return 1`,
};

/**
 * A token issued this long before the epoch is still taken as issued after it: the epoch is set when the
 * client connects, and a server issuing its first challenges as it starts must not have them refused.
 */
export const EPOCH_GRACE_MS = 1000;

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisSpentStore: ${message}`);
}

export class RedisSpentStore implements SpentStore {
  private readonly connection: RedisConnection;
  private readonly prefix: string;
  private readonly maxTtlMs: string;
  private readonly epochKey: string;

  constructor(options: RedisSpentStoreOptions) {
    if (typeof options !== 'object' || options === null)
      invalid(`options must be an object such as { client }, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (!KNOWN.has(field))
        invalid(
          `unknown option '${field}'; known options are ${[...KNOWN].join(', ')}${field === 'dialect' ? ' (the client is told apart by itself)' : ''}`,
        );
    }
    if (dialectOf(options.client) === undefined) {
      invalid(`'client' must be an ioredis, iovalkey, node-redis or valkey-glide client, got ${show(options.client)}`);
    }
    const prefix = options.prefix ?? 'sluice:pow:spent:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix))
      invalid(`'prefix' must be a string without '{' or '}', got ${show(options.prefix)}`);
    const timeoutMs = check.positiveNumber(options.timeoutMs ?? 50, "RedisSpentStore: 'timeoutMs'", {
      unit: 'milliseconds',
    });
    const maxTtlMs = check.nonNegativeInteger(options.maxTtlMs ?? 60_000, "RedisSpentStore: 'maxTtlMs'", {
      unit: 'milliseconds',
      note: '(the longest ttlMs of your challenges)',
    });
    const reporting = checkReporting('RedisSpentStore', options);
    this.connection = new RedisConnection({
      client: options.client,
      timeoutMs,
      owner: 'RedisSpentStore',
      report: {
        ...reporting,
        meanwhile:
          'RedisSpentStore cannot tell spent proofs from fresh ones, so verifySolution rejects (ERR_SLUICE_STORE_UNAVAILABLE)',
      },
    });
    // One hash tag for the spent keys and their epoch: one slot on a Cluster, so the script may touch both.
    this.prefix = `${prefix}{spent}:`;
    this.epochKey = `${this.prefix}epoch`;
    this.maxTtlMs = String(Math.max(0, maxTtlMs - EPOCH_GRACE_MS));
    // The epoch at each connection: a Redis that restarted empty gets it as the client reconnects, before
    // any token issued since can be spent. A failure here is the next spend's to meet (it sets it too).
    const touch = () => void this.connection.run(EPOCH, [this.epochKey], []).catch(() => {});
    adapt(options.client, 'RedisSpentStore').onReady(touch);
    if (this.connection.ready()) touch();
  }

  /** `_now`, the verifier's clock, is not read: Redis's clock judges (see the file's comment). */
  async spend(id: string, expiresAt: number, _now?: number): Promise<SpendResult> {
    const reply = Number(
      await this.connection.run(
        SPEND,
        [this.prefix + id, this.epochKey],
        [String(Math.floor(expiresAt)), this.maxTtlMs],
      ),
    );
    if (reply === 1) return true;
    if (reply === 2) return 'expired';
    return false; // spent already, or issued before Redis lost what it knew: either way not redeemable
  }
}
