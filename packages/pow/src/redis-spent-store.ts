/**
 * Spent store on Redis: the redemptions of one turn of the event loop in one script call (the kit's turn
 * batcher, TurnBatch, as the limiter's and the guard's Redis state), atomic across every server sharing
 * the Redis, through the kit's connection (RedisConnection: a deadline per call, the in-flight bound, the client's
 * trouble told once per outage, and its refusals and timeouts as ERR_SLUICE_STORE_UNAVAILABLE, which
 * spend() passes on: a spent store that cannot answer fails closed). Nothing here times or retries a
 * call itself. The client is duck-typed, so no Redis client is a dependency.
 *
 * Expiry is Redis's to judge, not each server's: the script reads Redis TIME, refuses a token already
 * expired by it, and keeps the spent key until the token's expiry on that same clock, so servers whose
 * clocks disagree cannot shorten it. A Redis that lost its keys (a restart without persistence, a flush)
 * would forget spent tokens: an epoch key, set (if absent) at each connection of the client and by any
 * spend that finds none, refuses every token that could have been issued before it (one that expires
 * sooner than `maxTtlMs` after the epoch, less EPOCH_GRACE_MS for the token issued as the epoch is set).
 */
import {
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
  TurnBatch,
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
 * A batch of spends. KEYS: the epoch key, then each spend's spent key (one hash tag: one slot on a
 * Cluster). ARGV: maxTtlMs, then each token's expiry (ms since the epoch, as signed). Replies one code per
 * spend, in order: 1 spent now, 0 spent already (by an earlier spend of the batch too), 2 expired by
 * Redis's clock, 3 possibly issued before Redis lost its keys. A missing epoch is set first, as a spend
 * alone would.
 */
export const SPEND: Script = {
  name: 'pow-spend',
  // SHA1 of the source, written out: @sluice/pow loads in Workers, without node:crypto (a test checks it).
  sha: '7846ae4a08c5a8ba18a23c4bd8f797633551460b',
  source: `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = tonumber(redis.call('GET', KEYS[1]) or '')
if not epoch then
  epoch = now
  redis.call('SET', KEYS[1], string.format('%d', now))
end
local floor = epoch + tonumber(ARGV[1])
local out = {}
for i = 2, #KEYS do
  local expires = tonumber(ARGV[i])
  local code = 0
  if now >= expires then code = 2
  elseif expires < floor then code = 3
  elseif redis.call('SET', KEYS[i], '1', 'NX', 'PX', string.format('%d', expires - now)) then code = 1 end
  out[i - 1] = code
end
return out`,
};

/** Most spends per script call: a flood's redemptions share calls, none of which holds Redis long. */
export const MAX_SPENDS = 64;

/** One redemption awaiting its batch's answer. */
interface Spend {
  readonly slot: number;
  readonly key: string;
  readonly expires: string;
  readonly resolve: (result: SpendResult) => void;
  readonly reject: (err: unknown) => void;
}

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
  /** This turn's spends, sent at its end (or once MAX_SPENDS wait, on a standalone Redis). */
  private readonly batch: TurnBatch<Spend>;

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
    this.connection.onReady(touch);
    if (this.connection.ready()) touch();
    const connection = this.connection;
    this.batch = new TurnBatch<Spend>({
      cluster: connection.cluster,
      max: MAX_SPENDS,
      eager: true,
      writeNow: () => connection.writeNow(),
      send: (spends) => {
        const keys = [this.epochKey];
        const args = [this.maxTtlMs];
        for (const s of spends) {
          keys.push(s.key);
          args.push(s.expires);
        }
        connection.send(SPEND, keys, args, answerSpends, spends, spends.length);
      },
    });
  }

  /** `_now`, the verifier's clock, is not read: Redis's clock judges (see the file's comment). */
  spend(id: string, expiresAt: number, _now?: number): Promise<SpendResult> {
    return new Promise<SpendResult>((resolve, reject) => {
      // Every key has the one hash tag: one slot, so the whole turn's spends may share a call on a Cluster.
      this.batch.add({ slot: 0, key: this.prefix + id, expires: String(Math.floor(expiresAt)), resolve, reject });
    });
  }
}

/**
 * The connection's answer to a batch: each spend's code, or the call's failure (refused, timed out, an
 * error) for every spend of it, which verifySolution passes on.
 */
function answerSpends(spends: Spend[], reply: unknown, failed: boolean, err: unknown): void {
  if (!failed) {
    const codes = reply as unknown[];
    if (Array.isArray(codes) && codes.length === spends.length) {
      for (let i = 0; i < spends.length; i++) {
        const code = Number(codes[i]);
        // 0: spent already; 3: issued before Redis lost what it knew. Either way not redeemable.
        spends[i]!.resolve(code === 1 ? true : code === 2 ? 'expired' : false);
      }
      return;
    }
    err = new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `RedisSpentStore: the spend script replied ${String(reply)} for ${spends.length} spends`,
    );
  }
  for (const s of spends) s.reject(err);
}
