/**
 * The memory state's login port: check()'s reads and record()'s writes on this process's records
 * (memory-records.ts, applying rules.ts), with the guard's token buckets in a store's tables (the Guard's
 * store, or while Redis cannot, the RedisStore's failure policy: redis/offline.ts). The records answer at
 * once; a table may answer with a Promise (a remote store), and then the calls that do not depend on each
 * other go out together, so a check waits for one round trip and a record for one. On a MemoryStore
 * nothing here makes a Promise.
 */
import {
  type Clock,
  createAlgorithm,
  type Decision,
  isPromise,
  type MaybePromise,
  type Policy,
  SluiceError,
  type Store,
  type StoreTable,
  then,
} from 'sluice/kit';
import type { TaggedAttempt } from './attempt.js';
import { backoffMs } from './backoff.js';
import type { MemoryRecords } from './memory-records.js';
import { judgePath } from './rules.js';
import type {
  AccountView,
  JudgedFailure,
  JudgedSuccess,
  LoginConfig,
  LoginPort,
  LoginReads,
  SourceView,
} from './state.js';

/** The guard's token buckets, as tables of a store. */
export interface LoginTables {
  readonly ip: StoreTable;
  readonly subnet: StoreTable;
  readonly pair: StoreTable;
}

/** The guard's buckets bound to `store`, as a Limiter binds its policies: a MemoryStore's answer without a Promise. */
export function bucketTables(
  store: Store,
  c: { readonly ip: Policy; readonly subnet: Policy; readonly pair: Policy; readonly clock: Clock },
): LoginTables {
  const bind = (p: Policy) => store.bind({ policies: [p], algorithms: [createAlgorithm(p)], clock: c.clock });
  return { ip: bind(c.ip), subnet: bind(c.subnet), pair: bind(c.pair) };
}

export class MemoryLogin implements LoginPort {
  constructor(
    private readonly state: MemoryRecords,
    private readonly tables: LoginTables,
    private readonly c: LoginConfig,
  ) {}

  read(t: TaggedAttempt, now: number, sources: boolean, buckets = true): MaybePromise<LoginReads> {
    const account = this.state.readAccount(t.account, now);
    // A familiar source's per-source reads are not made: the Guard ignores them.
    const stranger = sources && judgePath(account, t.sources) !== 'familiar';
    const { ip, subnet, pair } = this.tables;
    const peeks = all([
      stranger && buckets ? ip.decide(t.ipKey, 0, undefined) : undefined,
      stranger && buckets ? subnet.decide(t.subnetKey, 0, undefined) : undefined,
      buckets ? pair.decide(t.pairKey, 0, undefined) : undefined,
    ] as const);
    const state = this.state;
    const spec = this.c.spec;
    const ipSource = stranger ? state.readSource(t.address, now, spec) : undefined;
    const netSource = stranger ? state.readSource(t.subnet, now, spec) : undefined;
    const fingerprintSource =
      stranger && t.fingerprint !== undefined ? state.readSource(t.fingerprint, now, spec) : undefined;
    return then(peeks, ([ip, subnet, pair]) =>
      named(account, ip, subnet, pair, ipSource, netSource, fingerprintSource),
    );
  }

  refuse(t: TaggedAttempt, now: number): void {
    this.noteSources(t, true, now);
  }

  succeed(t: TaggedAttempt, now: number): MaybePromise<JudgedSuccess> {
    const c = this.c;
    // The path is judged from the account as it is now (check()'s may be stale), and the success vouches
    // for its sources when it is familiar; a stranger's is noted only where a source is tracked already.
    const judged = this.state.succeedAccountJudged(t.account, t.sources, now, c.familiarMs, c.maxFamiliar);
    // A store that cannot forget rejects its reset (RedisStore during an outage); the pair lane then
    // keeps its count, which errs towards caution, and the login still records. Other errors stand.
    const reset = resetKeepingUnavailable(this.tables.pair, t.pairKey);
    this.noteSources(t, false, now, judged.path !== 'familiar');
    return then(reset, () => judged);
  }

  fail(
    t: TaggedAttempt,
    passwordTag: string | undefined,
    random: () => number,
    now: number,
  ): MaybePromise<JudgedFailure> {
    const c = this.c;
    const state = this.state;
    const failed = state.failAccountJudged(t.account, t.sources, passwordTag, now, c.memoryMs);
    if (!failed.counted) return failed;
    const waitMs = backoffMs(c.backoff, failed.failures, random());
    if (waitMs > 0) state.lockAccount(t.account, failed.path, now + waitMs);
    const allowed = t.standing.allowed;
    const { ip, subnet, pair } = this.tables;
    const charged = all([
      pair.adjust(t.pairKey, 1),
      allowed ? undefined : ip.adjust(t.ipKey, 1),
      allowed ? undefined : subnet.adjust(t.subnetKey, 1),
    ]);
    this.noteSources(t, true, now);
    return then(charged, () => failed);
  }

  /**
   * Notes the attempt on its address, subnet and fingerprint. `onlyIfTracked`: a stranger's success,
   * noted only where a source is already tracked (MemoryRecords.noteSource).
   */
  private noteSources(t: TaggedAttempt, failed: boolean, now: number, onlyIfTracked = false): void {
    const { spec } = this.c;
    const state = this.state;
    state.noteSource(t.address, t.account, failed, now, spec, onlyIfTracked);
    state.noteSource(t.subnet, t.account, failed, now, spec, onlyIfTracked);
    if (t.fingerprint !== undefined) state.noteSource(t.fingerprint, t.account, failed, now, spec, onlyIfTracked);
  }
}

function named(
  account: AccountView | undefined,
  ip: Decision | undefined,
  subnet: Decision | undefined,
  pair: Decision | undefined,
  ipSource: SourceView | undefined,
  netSource: SourceView | undefined,
  fingerprintSource: SourceView | undefined,
): LoginReads {
  return { account, ip, subnet, pair, ipSource, netSource, fingerprintSource };
}

function keepUnlessUnavailable(err: unknown): void {
  if (!(err instanceof SluiceError && err.code === 'ERR_SLUICE_STORE_UNAVAILABLE')) throw err;
}

/** Resets a bucket; a store that cannot forget (sync throw or rejection alike) leaves it, other errors stand. */
function resetKeepingUnavailable(table: StoreTable, key: string): MaybePromise<void> {
  let r: MaybePromise<void>;
  try {
    r = table.reset(key);
  } catch (err) {
    return keepUnlessUnavailable(err);
  }
  return isPromise(r) ? r.catch(keepUnlessUnavailable) : undefined;
}

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: Awaited<T[K]> };

/**
 * Promise.all for values that are Promises only on an asynchronous store: the values themselves when none
 * is a Promise (the memory store, no microtask hop), else one Promise of them all (sent together).
 */
function all<T extends readonly unknown[]>(values: T): MaybePromise<Settled<T>> {
  for (const v of values) if (isPromise(v)) return Promise.all(values) as Promise<Settled<T>>;
  return values as unknown as Settled<T>;
}
