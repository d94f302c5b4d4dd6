/**
 * The login port of a record-level GuardState (the memory one; a remote one given explicitly) with the
 * guard's token buckets in the Guard's store: check()'s reads and record()'s writes as the state's calls
 * and the store's. Calls that do not depend on each other go out together, so on an asynchronous state
 * or store a check waits for one round trip and a record for one or two; on the memory state and store
 * nothing here makes a Promise.
 */
import { SluiceError } from '../core/errors.js';
import { isPromise, then, type MaybePromise } from '../core/maybe-promise.js';
import type { Decision } from '../core/types.js';
import type { StoreTable } from '../stores/store.js';
import type { TaggedAttempt } from './attempt.js';
import { backoffMs, type BackoffSchedule } from './backoff.js';
import { judgePath } from './rules.js';
import type { AccountView, GuardState, JudgedFailure, JudgedSuccess, LoginPort, LoginReads, Path, SourceSpec, SourceView } from './state.js';

/** The guard's token buckets, as tables of a store. */
export interface LoginTables {
  readonly ip: StoreTable;
  readonly subnet: StoreTable;
  readonly pair: StoreTable;
}

/** What a StateLogin needs of the guard's options. */
export interface StateLoginConfig {
  readonly spec: SourceSpec;
  readonly memoryMs: number;
  readonly familiarMs: number;
  readonly maxFamiliar: number;
  readonly backoff: BackoffSchedule;
  /**
   * Whether record() lets the state judge the attempt's path in the call that writes it
   * (failAccountJudged, succeedAccountJudged), saving the read before the write: for a remote state
   * that has them. In memory a read costs no round trip, and the two plain calls cost less.
   */
  readonly judging: boolean;
}

export class StateLogin implements LoginPort {
  constructor(
    readonly state: GuardState,
    private readonly tables: LoginTables,
    private readonly c: StateLoginConfig,
  ) {}

  read(t: TaggedAttempt, now: number, sources: boolean, buckets = true): MaybePromise<LoginReads> {
    // Which reads a check needs depends on the account (is the source familiar?), so on an asynchronous
    // state they are all sent with the account's read, as for a stranger, and a familiar source's are
    // dropped unread by the Guard: reads change nothing, and a few lookups more cost less than a second
    // round trip for the login (and one timeout, not seven, when the backend is frozen).
    const readAccount = this.state.readAccount(t.account, now);
    if (isPromise(readAccount)) {
      if (sources) return Promise.all([readAccount, this.sourceReads(t, now, true, buckets)]).then(([account, reads]) => named(account, reads));
      return readAccount.then((account) => then(this.sourceReads(t, now, false, buckets), (reads) => named(account, reads)));
    }
    const stranger = sources && judgePath(readAccount, t.sources) !== 'familiar';
    return then(this.sourceReads(t, now, stranger, buckets), (reads) => named(readAccount, reads));
  }

  refuse(t: TaggedAttempt, now: number): MaybePromise<void> {
    return then(this.noteSources(t, true, now), () => undefined);
  }

  async succeed(t: TaggedAttempt, now: number, checkedFamiliar: boolean | undefined): Promise<JudgedSuccess> {
    const c = this.c;
    const state = this.state;
    // The path (familiar or not) is judged from the attempt's location and device tags. A judging state
    // judges it in the call that writes; any other is read first.
    let path: Path | undefined;
    let unfamiliarBefore = 0;
    if (!c.judging) [path, unfamiliarBefore] = await this.judged(t, now);
    // A success vouches for its sources when its path is familiar; a stranger's is noted only where a
    // source is tracked already (GuardState.noteSource). The path is known here when it was read first;
    // a judging state tells it with its write, so unless check() in this process found it, the notes
    // wait for that answer.
    const familiar = path !== undefined ? path === 'familiar' : checkedFamiliar;
    // Independent writes to different records: sent together.
    const writes = all([
      path === undefined
        ? state.succeedAccountJudged!(t.account, t.sources, now, c.familiarMs, c.maxFamiliar)
        : state.succeedAccount(t.account, path, t.sources, now, c.familiarMs, c.maxFamiliar),
      // A store that cannot forget rejects its reset (RedisStore during an outage); the pair lane then
      // keeps its count, which errs towards caution, and the login still records. Other errors stand.
      resetKeepingUnavailable(this.tables.pair, t.pairKey),
      familiar === undefined ? undefined : this.noteSources(t, false, now, !familiar),
    ] as const);
    const [judged] = isPromise(writes) ? await writes : writes;
    if (judged !== undefined) [path, unfamiliarBefore] = [judged.path, judged.unfamiliarFailuresBefore];
    if (familiar === undefined) {
      const noted = this.noteSources(t, false, now, path !== 'familiar');
      if (isPromise(noted)) await noted;
    }
    return { path: path!, unfamiliarFailuresBefore: unfamiliarBefore };
  }

  async fail(t: TaggedAttempt, passwordTag: string | undefined, random: () => number, now: number): Promise<JudgedFailure> {
    const c = this.c;
    const state = this.state;
    let path: Path | undefined;
    if (!c.judging) [path] = await this.judged(t, now);
    const failAccount = path === undefined ? state.failAccountJudged!(t.account, t.sources, passwordTag, now, c.memoryMs) : state.failAccount(t.account, path, passwordTag, now, c.memoryMs);
    const outcome = isPromise(failAccount) ? await failAccount : failAccount;
    const failed: JudgedFailure = path === undefined ? (outcome as JudgedFailure) : { ...outcome, path };
    if (!failed.counted) return failed;
    const waitMs = backoffMs(c.backoff, failed.failures, random());
    const allowed = t.standing.allowed;
    const { ip, subnet, pair } = this.tables;
    const writes = all([
      waitMs > 0 ? state.lockAccount(t.account, failed.path, now + waitMs) : undefined,
      pair.adjust(t.pairKey, 1),
      allowed ? undefined : ip.adjust(t.ipKey, 1),
      allowed ? undefined : subnet.adjust(t.subnetKey, 1),
      this.noteSources(t, true, now),
    ]);
    if (isPromise(writes)) await writes;
    return failed;
  }

  /** The attempt's path, read from its account, with the strangers' failures the account has. */
  private async judged(t: TaggedAttempt, now: number): Promise<[Path, number]> {
    const readAccount = this.state.readAccount(t.account, now);
    const account = isPromise(readAccount) ? await readAccount : readAccount;
    return [judgePath(account, t.sources), account?.unfamiliarFailures ?? 0];
  }

  /** The buckets and source records check() reads: the per-source ones only for a stranger; the pair's always, with `buckets`. */
  private sourceReads(t: TaggedAttempt, now: number, stranger: boolean, buckets: boolean): MaybePromise<SourceReads> {
    const { spec } = this.c;
    const { ip, subnet, pair } = this.tables;
    const state = this.state;
    return all([
      stranger && buckets ? ip.decide(t.ipKey, 0, undefined) : undefined,
      stranger && buckets ? subnet.decide(t.subnetKey, 0, undefined) : undefined,
      buckets ? pair.decide(t.pairKey, 0, undefined) : undefined,
      stranger ? state.readSource(t.address, now, spec) : undefined,
      stranger ? state.readSource(t.subnet, now, spec) : undefined,
      stranger && t.fingerprint !== undefined ? state.readSource(t.fingerprint, now, spec) : undefined,
    ] as const);
  }

  /**
   * Notes the attempt on its address, subnet and fingerprint: a Promise only if the state answers with one.
   * `onlyIfTracked`: a stranger's success, noted only where a source is already tracked (GuardState.noteSource).
   */
  private noteSources(t: TaggedAttempt, failed: boolean, now: number, onlyIfTracked = false): MaybePromise<unknown> {
    const { spec } = this.c;
    const state = this.state;
    return all([
      state.noteSource(t.address, t.account, failed, now, spec, onlyIfTracked),
      state.noteSource(t.subnet, t.account, failed, now, spec, onlyIfTracked),
      t.fingerprint === undefined ? undefined : state.noteSource(t.fingerprint, t.account, failed, now, spec, onlyIfTracked),
    ]);
  }
}

type SourceReads = readonly [Decision | undefined, Decision | undefined, Decision | undefined, SourceView | undefined, SourceView | undefined, SourceView | undefined];

function named(account: AccountView | undefined, r: SourceReads): LoginReads {
  return { account, ip: r[0], subnet: r[1], pair: r[2], ipSource: r[3], netSource: r[4], fingerprintSource: r[5] };
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
