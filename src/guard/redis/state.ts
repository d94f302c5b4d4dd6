/**
 * RedisGuardState: the login guard's state (src/guard/state.ts) on Redis, so every app server sees every
 * other's failures. One script (guard.lua, beside this file) runs each method atomically on the keys of
 * one account or one source, which share a hash tag, so a Cluster never answers CROSSSLOT.
 *
 * It lives in the guard, not beside RedisStore: the store knows nothing of the guard (sluice/redis carries
 * no guard code), and the guard builds this state on a RedisStore's client when given one (redisGuardStateOf).
 *
 * @example
 * const store = new RedisStore({ client: new Redis() });
 * const guard = new Guard({ secret, store }); // buckets and state both on Redis, one state per store
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SluiceError, show } from '../../core/index.js';
import { MemoryGuardState } from '../memory-state.js';
import { registerGuardStateMaker, type AccountView, type FailOutcome, type GuardState, type JudgedFailure, type JudgedSuccess, type Path, type SourceSpec, type SourceView } from '../state.js';
import { adapt, type RedisAdapter } from '../../stores/redis/adapter.js';
import { escapeId } from '../../stores/redis/keys.js';
import { RedisStore } from '../../stores/redis/redis-store.js';

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
  /** An ioredis Redis or Cluster, or a node-redis (v4 or later) client or cluster, connected by you. */
  client: unknown;
  /** Start of every key: `<prefix>:{ga:<account tag>}`, `<prefix>:{gs:<source tag>}[:d]`. No braces. Default 'sluice'. */
  prefix?: string;
  /** Longest wait for Redis per call before `onError` answers. Default 50 ms. */
  timeoutMs?: number;
  /** What the state does when Redis cannot answer. Default 'open'. */
  onError?: GuardStateOnError;
}

export interface RedisGuardStateStats {
  /** Script calls sent. */
  calls: number;
  /** Calls answered by `onError`: timed out, failed, or refused because the client was not ready. */
  fallbacks: number;
  timeouts: number;
  errors: number;
  refused: number;
  /** NOSCRIPT replies, each followed by one EVAL that loads the script. */
  reloads: number;
}

const KNOWN = new Set(['client', 'prefix', 'timeoutMs', 'onError']);
const SOURCE = readFileSync(new URL('./guard.lua', import.meta.url), 'utf8');
const SHA = createHash('sha1').update(SOURCE).digest('hex');

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisGuardState ${message}`);
}

/** Failure counts and the familiar list as the script replies them: [uf, ff, ul, fl, lf, "fam,..."]. */
type AccountReply = [number, number, string, string, string, string];
/** [generation, failures, successes, previous failures, previous successes, distinct accounts, the same in the long window]. */
type SourceReply = [string, number, number, number, number, number, number];

export class RedisGuardState implements GuardState {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly onError: GuardStateOnError;
  readonly stats: RedisGuardStateStats = { calls: 0, fallbacks: 0, timeouts: 0, errors: 0, refused: 0, reloads: 0 };
  private readonly adapter: RedisAdapter;
  private local: MemoryGuardState | undefined;

  constructor(options: RedisGuardStateOptions) {
    if (typeof options !== 'object' || options === null) invalid(`options must be an object such as { client }, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (!KNOWN.has(field)) invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
    }
    if (options.client === undefined) invalid(`'client' is required: an ioredis or node-redis client`);
    this.adapter = adapt(options.client);
    const prefix = options.prefix ?? 'sluice';
    if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
      invalid(`'prefix' must be a non-empty string without '{' or '}' (the tag is the key's hash tag), got ${show(prefix)}`);
    }
    const timeoutMs = options.timeoutMs ?? 50;
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) invalid(`'timeoutMs' must be a positive number of milliseconds, got ${show(timeoutMs)}`);
    const onError = options.onError ?? 'open';
    if (onError !== 'open' && onError !== 'closed' && onError !== 'local') invalid(`'onError' must be 'open', 'closed' or 'local', got ${show(onError)}`);
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.onError = onError;
    this.adapter.onError(() => this.stats.errors++);
  }

  /** The key of an account's record; exported for tests and audits (`redis-cli --scan`). */
  accountKey(account: string): string {
    return `${this.prefix}:{ga:${escapeId(account)}}`;
  }

  /** The keys of a source's record and of its distinct-accounts set: one hash tag, one slot. */
  sourceKeys(source: string): [string, string] {
    const k = `${this.prefix}:{gs:${escapeId(source)}}`;
    return [k, `${k}:d`];
  }

  async readAccount(account: string, now: number): Promise<AccountView | undefined> {
    return this.run([this.accountKey(account)], ['readAccount', num(now)], accountView, (l) => l.readAccount(account, now), undefined);
  }

  failAccount(account: string, path: Path, passwordTag: string | undefined, now: number, memoryMs: number): Promise<FailOutcome> {
    return this.run(
      [this.accountKey(account)],
      ['failAccount', num(now), code(path), tagArg(passwordTag), num(memoryMs)],
      failOutcome,
      (l) => l.failAccount(account, path, passwordTag, now, memoryMs),
      // Open: the failure is not remembered, so there is nothing to back off from; the buckets still count it.
      { counted: true, failures: 0, total: 0 },
    );
  }

  /** failAccount with the path judged by the script from the account's familiar list: one call, not a read and a write. */
  failAccountJudged(account: string, sources: readonly string[], passwordTag: string | undefined, now: number, memoryMs: number): Promise<JudgedFailure> {
    checkSourceTags(sources);
    return this.run(
      [this.accountKey(account)],
      ['failAccount', num(now), 'j', tagArg(passwordTag), num(memoryMs), ...sources],
      (r) => ({ ...failOutcome(r), path: pathOf((r as FailReply)[3]) }),
      (l) => l.failAccountJudged(account, sources, passwordTag, now, memoryMs),
      // Open: as readAccount and failAccount open, a stranger's failure that is not remembered.
      { counted: true, failures: 0, total: 0, path: 'unfamiliar' },
    );
  }

  /** succeedAccount with the path judged by the script, as failAccountJudged. */
  succeedAccountJudged(account: string, sources: readonly string[], now: number, familiarMs: number, maxFamiliar: number): Promise<JudgedSuccess> {
    checkSourceTags(sources);
    return this.run(
      [this.accountKey(account)],
      ['succeedAccount', num(now), 'j', num(familiarMs), String(maxFamiliar), ...sources],
      (r) => {
        const [path, before] = r as [string, number];
        return { path: pathOf(path), unfamiliarFailuresBefore: Number(before) };
      },
      (l) => l.succeedAccountJudged(account, sources, now, familiarMs, maxFamiliar),
      { path: 'unfamiliar', unfamiliarFailuresBefore: 0 },
    );
  }

  async lockAccount(account: string, path: Path, until: number): Promise<void> {
    // No `now` here (the interface passes none): the script moves the key's TTL by as much as the lock
    // moves the record's end, so it needs none.
    await this.run([this.accountKey(account)], ['lockAccount', '0', code(path), num(until)], () => undefined, (l) => l.lockAccount(account, path, until), undefined);
  }

  async succeedAccount(account: string, path: Path, sources: readonly string[], now: number, familiarMs: number, maxFamiliar: number): Promise<void> {
    checkSourceTags(sources);
    await this.run(
      [this.accountKey(account)],
      ['succeedAccount', num(now), code(path), num(familiarMs), String(maxFamiliar), ...sources],
      () => undefined,
      (l) => l.succeedAccount(account, path, sources, now, familiarMs, maxFamiliar),
      undefined,
    );
  }

  noteSource(source: string, account: string, failed: boolean, now: number, spec: SourceSpec): Promise<SourceView> {
    return this.run(
      this.sourceKeys(source),
      ['noteSource', num(now), ...specArgs(spec), account, failed ? '1' : '0'],
      (r) => sourceView(r as SourceReply, now, spec),
      (l) => l.noteSource(source, account, failed, now, spec),
      { failures: 0, successes: 0, distinctFailedAccounts: 0, distinctFailedAccountsLong: 0 },
    );
  }

  readSource(source: string, now: number, spec: SourceSpec): Promise<SourceView | undefined> {
    return this.run(
      this.sourceKeys(source),
      ['readSource', num(now), ...specArgs(spec)],
      (r) => (r == null ? undefined : sourceView(r as SourceReply, now, spec)),
      (l) => l.readSource(source, now, spec),
      undefined,
    );
  }

  /** The key of a monitor's failure count in one anomaly bucket: one hash tag per monitor, one slot. */
  failureCountKey(monitor: string, bucket: number): string {
    return `${this.prefix}:{gf:${escapeId(monitor)}}:${num(bucket)}`;
  }

  /**
   * Adds to and reads the fleet's failure counts (one call for every bucket given). Unlike the account and
   * source calls it has no failure policy of its own: it rejects, and the guard keeps what it could not
   * share for the next call, deciding meanwhile on its own count and the last shared one.
   */
  async shareFailures(monitor: string, adds: readonly (readonly [bucket: number, count: number])[], ttlMs: number): Promise<number[]> {
    if (adds.length === 0) return [];
    const reply = (await this.call(
      adds.map(([bucket]) => this.failureCountKey(monitor, bucket)),
      ['shareFailures', num(Math.ceil(ttlMs)), ...adds.map(([, count]) => num(count))],
    )) as unknown[];
    return reply.map(Number);
  }

  /**
   * One script call within timeoutMs, its reply parsed. When Redis cannot answer, `onError` decides: the
   * `open` answer, a rejection, or the same call on this process's local state.
   */
  private async run<T>(keys: string[], args: string[], parse: (reply: unknown) => T, local: (l: MemoryGuardState) => T, open: T): Promise<T> {
    let reply: unknown;
    try {
      reply = await this.call(keys, args);
    } catch (err) {
      this.stats.fallbacks++;
      if (this.onError === 'closed') {
        throw err instanceof SluiceError ? err : new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisGuardState: Redis failed: ${(err as Error)?.message ?? String(err)}`);
      }
      if (this.onError === 'local') return local((this.local ??= new MemoryGuardState()));
      return open;
    }
    return parse(reply);
  }

  private call(keys: string[], args: string[]): Promise<unknown> {
    const { adapter, stats } = this;
    if (!adapter.ready()) {
      // Not connected: a command would wait in the client's offline queue for as long as the outage.
      stats.refused++;
      return Promise.reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'RedisGuardState: the Redis client is not ready'));
    }
    stats.calls++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stats.timeouts++;
        reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisGuardState: no answer within 'timeoutMs' ${this.timeoutMs}`));
      }, this.timeoutMs);
      let sent: Promise<unknown>;
      try {
        sent = adapter.evalsha(SHA, keys, args);
      } catch (err) {
        sent = Promise.reject(err); // a client that throws instead of rejecting still gets onError
      }
      sent
        .catch((err: unknown) => {
          if (!String((err as Error)?.message ?? err).startsWith('NOSCRIPT')) throw err;
          stats.reloads++;
          return adapter.eval(SOURCE, keys, args);
        })
        .then(
          (reply) => {
            clearTimeout(timer);
            resolve(reply);
          },
          (err: unknown) => {
            clearTimeout(timer);
            stats.errors++;
            reject(err);
          },
        );
    });
  }
}

function accountView(reply: unknown): AccountView | undefined {
  if (reply == null) return undefined;
  const [uf, ff, ul, fl, lf, fam] = reply as AccountReply;
  return {
    unfamiliarFailures: Number(uf),
    familiarFailures: Number(ff),
    unfamiliarLockedUntil: Number(ul),
    familiarLockedUntil: Number(fl),
    lastFailureAt: Number(lf),
    familiar: fam === '' ? [] : String(fam).split(','),
  };
}

/** A number as the script reads it: integers exactly, with no exponent. */
function num(n: number): string {
  return Number.isInteger(n) ? n.toFixed(0) : String(n);
}

function code(path: Path): string {
  return path === 'familiar' ? 'f' : 'u';
}

/** failAccount's reply: counted (1 or 0), failures on the path, total, and the path ('f' or 'u'). */
type FailReply = [number, number, number, string];

function failOutcome(reply: unknown): FailOutcome {
  const [counted, failures, total] = reply as FailReply;
  return { counted: Number(counted) === 1, failures: Number(failures), total: Number(total) };
}

function pathOf(code: string): Path {
  return code === 'f' ? 'familiar' : 'unfamiliar';
}

/** Source tags travel comma-joined in the account hash, so none may be empty or hold a comma. */
function checkSourceTags(sources: readonly string[]): void {
  for (const s of sources) if (s === '' || s.includes(',')) invalid(`source tag must be a non-empty string without ',', got ${show(s)}`);
}

function tagArg(tag: string | undefined): string {
  if (tag === undefined) return '';
  if (tag === '' || tag.includes(',')) invalid(`password tag must be a non-empty string without ',', got ${show(tag)}`);
  return tag;
}

function specArgs(spec: SourceSpec): string[] {
  return [num(spec.distinctWindowMs), num(spec.ratioWindowMs), String(spec.maxDistinct), num(spec.longDistinctWindowMs ?? spec.distinctWindowMs)];
}

/** The two-generation estimate of source-table.ts: the previous window fades linearly across this one. */
function sourceView(r: SourceReply, now: number, spec: SourceSpec): SourceView {
  const ratioMs = spec.ratioWindowMs;
  const weight = (ratioMs - (now - Number(r[0]) * ratioMs)) / ratioMs;
  return {
    failures: Number(r[3]) * weight + Number(r[1]),
    successes: Number(r[4]) * weight + Number(r[2]),
    distinctFailedAccounts: Number(r[5]),
    distinctFailedAccountsLong: Number(r[6]),
  };
}

/** One state per store, so every Guard given the same RedisStore shares one (as its buckets do). */
const perStore = new WeakMap<RedisStore, RedisGuardState>();

/**
 * The guard state on a RedisStore's client, prefix and timeout, or undefined if `store` is not a
 * RedisStore. Its onError follows the store's: 'open' stays open, 'closed' rejects, and insurance keeps
 * local state while Redis is away. A Guard given a RedisStore and no `state` takes this one.
 */
export function redisGuardStateOf(store: unknown): RedisGuardState | undefined {
  if (!(store instanceof RedisStore)) return undefined;
  let state = perStore.get(store);
  if (state === undefined) {
    state = new RedisGuardState({ client: store.client, prefix: store.prefix, timeoutMs: store.timeoutMs, onError: typeof store.onError === 'object' ? 'local' : store.onError });
    perStore.set(store, state);
  }
  return state;
}

registerGuardStateMaker(redisGuardStateOf);
