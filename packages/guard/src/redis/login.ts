/**
 * A Guard's logins on Redis: check() is one read of the state's batch and record() one script operation,
 * each carrying everything the guard needs from the account (with its account+address pair bucket, in the
 * account's slot) and from the address, subnet and fingerprint (each source's record holds its bucket).
 * On a standalone Redis a turn's reads are one MGET and its operations script calls shared with every
 * other login of the turn; on a Cluster each is one call per slot involved, sent together, except that a
 * failure's source writes wait for the account's answer (a repeated wrong password counts nowhere). A
 * success is computed here from the record its check read (records.ts), and the script only compares,
 * packs and writes it; a first login's, whose check found no key at all, is one SET NX and no script.
 *
 * Decisions stay the guard's (guard.ts): this file only moves the reads and writes state-login.ts makes,
 * with the same arithmetic in the script (token-bucket.lua is the limiter's twin of core/token-bucket.ts;
 * backoffMs is backoff.ts's). When Redis cannot answer, each operation rejects with OFFLINE unless the
 * state fails closed, and offline.ts then answers it from the offline state, as the memory state would.
 */
import { createHash } from 'node:crypto';
import { bySlot, type ConnectionStats, type Decision, SluiceError } from 'sluice/kit';
import type { TaggedAttempt } from '../attempt.js';
import type {
  JudgedFailure,
  JudgedSuccess,
  LoginConfig,
  LoginPort,
  LoginReads,
  SourceSpec,
  SourceView,
} from '../state.js';
import { longestWindow } from '../rules.js';
import { hash32 } from '../source-table.js';
import { RecordBudget } from './budget.js';
import { accountView, BucketPeek, packSuccess, sourceViewOf, succeededAccount } from './records.js';
import {
  checkTags,
  num,
  readFailure,
  readSuccess,
  successArgs,
  type LoginContext,
  type ReadUnit,
  type Unit,
} from './wire.js';

/** The rejection of a login operation whose call failed, when the state does not fail closed. */
export const OFFLINE = new SluiceError(
  'ERR_SLUICE_STORE_UNAVAILABLE',
  'RedisGuardState: Redis did not answer; the guard decides on its offline state',
);

/** What a LoginSession uses of its RedisGuardState (state.ts, which makes the sessions). */
export interface LoginHost {
  readonly onError: 'open' | 'closed' | 'local';
  readonly stats: ConnectionStats & { fallbacks: number };
  readonly cluster: boolean;
  accountKey(account: string): string;
  pairKey(account: string, address: string): string;
  sourceKey(source: string): string;
  slot(kind: 'ga' | 'gs' | 'gf', tag: string): number;
  addSession(constants: string[]): number;
  /** Most records of never-succeeded accounts and sources kept under a flood (budget.ts), per app server. */
  readonly maxRecords: number;
  enqueue(unit: Unit): void;
  enqueueRead(unit: ReadUnit): void;
  create(key: string, value: Uint8Array, ttlMs: number): Promise<boolean>;
}

export class LoginSession implements LoginPort {
  private readonly id: string;
  /** The peeks of the address's, the subnet's and the pair's buckets. */
  readonly peeks: [BucketPeek, BucketPeek, BucketPeek];
  /** What each attempt's check found, for its record (dies with the tags). */
  readonly found = new WeakMap<TaggedAttempt, Found>();
  private readonly familiarMs: number;
  private readonly maxFamiliar: number;

  constructor(
    private readonly state: LoginHost,
    c: LoginConfig,
  ) {
    for (const p of [c.ip, c.subnet, c.pair]) {
      if (p.algorithm !== 'token-bucket')
        throw new Error(`sluice internal: the guard's bucket '${p.name}' must be a token bucket`);
    }
    if (c.ip.windowMs !== 86_400_000 || c.subnet.windowMs !== 86_400_000 || c.pair.windowMs !== 3_600_000)
      throw new Error("sluice internal: the guard script fixes its buckets' windows (1d, 1d, 1h)");
    const s = c.spec;
    const b = c.backoff;
    // guard.lua's session(): the order is the script's.
    const constants = [
      num(s.distinctWindowMs),
      num(s.longDistinctWindowMs ?? s.distinctWindowMs),
      num(s.ratioWindowMs),
      String(s.maxDistinct),
      num(c.memoryMs),
      num(c.familiarMs),
      String(c.maxFamiliar),
      String(b.freeFailures),
      num(b.baseMs),
      num(b.maxMs),
      String(b.jitter),
      String(c.ip.limit),
      String(c.ip.burst),
      String(c.subnet.limit),
      String(c.subnet.burst),
      String(c.pair.limit),
      String(c.pair.burst),
    ];
    // The signature the script caches the parsed constants by: the constants themselves, hashed.
    const signature = createHash('sha1').update(constants.join(',')).digest('base64url').slice(0, 16);
    this.id = String(state.addSession([signature, ...constants]));
    this.spec = s;
    this.budget = new RecordBudget(state.maxRecords, s.distinctWindowMs, longestWindow(s));
    this.peeks = [new BucketPeek(c.ip), new BucketPeek(c.subnet), new BucketPeek(c.pair)];
    this.familiarMs = c.familiarMs;
    this.maxFamiliar = c.maxFamiliar;
  }

  readonly spec: SourceSpec;
  /** How long this guard's never-succeeded records may live on Redis now (budget.ts), sent with each operation. */
  private readonly budget: RecordBudget;

  /**
   * check()'s reads: the account with its pair bucket, and with `sources` the address's and subnet's
   * records and buckets and the fingerprint's record. A read, not a script: one MGET for all of them on a
   * standalone Redis (one per slot on a Cluster, sent together), decoded here (records.ts).
   */
  /** `buckets` is not needed: the buckets are in the records' keys, read by the same MGET. */
  read(t: TaggedAttempt, now: number, sources: boolean): Promise<LoginReads> {
    const st = this.state;
    // Sources not read count as found: a record then writes them as it would without this check.
    const check = new CheckRead(this, t, now, sources ? 0 : ADDRESS_FOUND | SUBNET_FOUND | FINGERPRINT_FOUND);
    const promise = new Promise<LoginReads>((resolve, reject) => {
      check.resolve = resolve;
      check.reject = reject;
    });
    const parts: ReadPart[] = [
      {
        slot: st.slot('ga', t.account),
        keys: [st.accountKey(t.account), st.pairKey(t.account, t.address)],
        kind: ACCOUNT,
      },
    ];
    if (sources) {
      parts.push(
        { slot: st.slot('gs', t.address), keys: [st.sourceKey(t.address)], kind: ADDRESS },
        { slot: st.slot('gs', t.subnet), keys: [st.sourceKey(t.subnet)], kind: SUBNET },
      );
      if (t.fingerprint !== undefined)
        parts.push({ slot: st.slot('gs', t.fingerprint), keys: [st.sourceKey(t.fingerprint)], kind: FINGERPRINT });
    }
    const groups = st.cluster ? bySlot(parts) : [parts];
    check.pending = groups.length;
    for (const group of groups) st.enqueueRead(new LoginRead(check, group));
    return promise;
  }

  /**
   * record()'s success: the account's success (its path judged there), the pair bucket forgotten, every
   * source noted, a stranger's success only on a source already tracked. On a standalone Redis one call,
   * whose source notes follow the path the account's part judged; on a Cluster the notes are in other
   * slots, so they follow `familiar` (check()'s judgement) when this process checked the attempt, and
   * otherwise wait for the account's answer.
   */
  succeed(t: TaggedAttempt, now: number, familiar: boolean | undefined): Promise<JudgedSuccess> {
    checkTags(t.sources, 'source');
    const st = this.state;
    // What the check in this process found: a key it found empty is left out (a stranger's success writes
    // nothing where nothing is tracked), at the price of missing what another process wrote meanwhile.
    const found = familiar === undefined ? undefined : this.found.get(t);
    if (found !== undefined && found.account === null && found.keys === 0) return this.create(t, now, found);
    const pair = found === undefined || (found.keys & PAIR) !== 0;
    const accountKeys = pair
      ? [st.accountKey(t.account), st.pairKey(t.account, t.address)]
      : [st.accountKey(t.account)];
    const args: string[] = ['AS', pair ? '1' : '0', String(t.sources.length), ...t.sources];
    if (found !== undefined) {
      // The success computed here from the record the check read; the script only compares, packs and writes it.
      args[0] = 'AC';
      args.splice(
        1,
        0,
        ...successArgs(
          found.account,
          succeededAccount(found.account, now, t.sources, this.familiarMs, this.maxFamiliar),
        ),
      );
    }
    const parts: Part[] = [{ slot: st.slot('ga', t.account), keys: accountKeys, args, kind: ACCOUNT }];
    if (!st.cluster || familiar !== undefined) {
      this.notes(
        parts,
        t,
        familiar === undefined ? 'j' : familiar ? '0' : 't',
        familiar === false ? found?.keys : undefined,
      );
      return this.send(new SuccessOp(this), parts, now);
    }
    return this.send(new SuccessOp(this), parts, now).then((judged) => {
      const notes: Part[] = [];
      this.notes(notes, t, judged.path === 'familiar' ? '0' : 't');
      return this.send(new SuccessOp(this, judged), notes, now);
    });
  }

  /**
   * A first login's success, where its check found no key at all (no account, pair or source record):
   * the account's record is created by one SET NX, no script, and nothing else is written (a stranger's
   * success notes only sources already tracked). If another login created the record meanwhile, the
   * success goes to the script as a success this process did not check.
   */
  private create(t: TaggedAttempt, now: number, found: Found): Promise<JudgedSuccess> {
    const done = succeededAccount(found.account, now, t.sources, this.familiarMs, this.maxFamiliar);
    return this.state.create(this.state.accountKey(t.account), packSuccess(done), done.ttlMs).then(
      (created) => (created ? done.judged : this.succeed(t, now, undefined)),
      (err: unknown) => Promise.reject(this.failure(err)),
    );
  }

  /** check()'s refusal of a stranger: its sources noted as failed, no bucket charged. One operation, no reply. */
  refuse(t: TaggedAttempt, now: number): Promise<void> {
    checkTags(t.sources, 'source');
    this.budget.note(this.newSources(t), now);
    const parts: Part[] = [];
    this.notes(parts, t, '1', undefined, false);
    return this.send(new NoteOp(this), parts, now);
  }

  /**
   * record()'s failure: counted on the account unless the password is one of its last three wrong ones,
   * then its backoff lock (with `random` for the jitter, drawn here for every failure rather than only a
   * counted one), the pair bucket, and every source noted with the address's and subnet's buckets
   * charged (not for an allow-listed address).
   */
  fail(
    t: TaggedAttempt,
    passwordTag: string | undefined,
    randomUnit: () => number,
    now: number,
  ): Promise<JudgedFailure> {
    const random = randomUnit();
    checkTags(t.sources, 'source');
    if (passwordTag !== undefined) checkTags([passwordTag], 'password');
    const found = this.found.get(t);
    this.budget.note(this.newSources(t) + (found === undefined || found.account === null ? 1 : 0), now);
    const st = this.state;
    const notes: Part[] = [];
    this.notes(notes, t, '1');
    // On a standalone Redis the source writes ride in the same call, skipped by the script when the
    // failure does not count; on a Cluster they are in other slots, so they wait for the answer.
    const together = !st.cluster;
    const account: Part = {
      slot: st.slot('ga', t.account),
      keys: [st.accountKey(t.account), st.pairKey(t.account, t.address)],
      args: [
        'AF',
        passwordTag ?? '',
        String(random),
        String(t.sources.length),
        ...t.sources,
        together ? String(notes.length) : '0',
      ],
      kind: ACCOUNT,
    };
    if (together) {
      notes.unshift(account);
      return this.send(new FailOp(this), notes, now);
    }
    return this.send(new FailOp(this), [account], now).then((failed) =>
      failed.counted ? this.send(new FailOp(this, failed), notes, now) : failed,
    );
  }

  /**
   * The records a failure noted on the attempt's sources makes, where its check found none (all of them
   * when this process did not check it: the budget errs towards capping sooner).
   */
  private newSources(t: TaggedAttempt): number {
    const keys = this.found.get(t)?.keys ?? 0;
    let n = ((keys & ADDRESS_FOUND) === 0 ? 1 : 0) + ((keys & SUBNET_FOUND) === 0 ? 1 : 0);
    if (t.fingerprint !== undefined && (keys & FINGERPRINT_FOUND) === 0) n++;
    return n;
  }

  /**
   * Adds to `parts` the SN operations of an outcome on the address, subnet and fingerprint: '1' a failure
   * (which also charges the address's and subnet's buckets unless allow-listed), or a success: '0', 't'
   * a stranger's, 'j' as the account's part before it judged (see guard.lua's SN).
   */
  private notes(
    parts: Part[],
    t: TaggedAttempt,
    outcome: '1' | '0' | 't' | 'j',
    found?: number,
    charged = outcome === '1',
  ): void {
    const st = this.state;
    const charge = charged && !t.standing.allowed;
    // `found`: for a stranger's success, the sources the check found a record of; the others are left out.
    const note = (bit: number) => found === undefined || (found & bit) !== 0;
    const account = String(hash32(t.account)); // a source keeps its failed accounts' hashes, as the memory state's table
    if (note(ADDRESS_FOUND))
      parts.push({
        slot: st.slot('gs', t.address),
        keys: [st.sourceKey(t.address)],
        args: ['SN', account, charge ? 'i' : outcome],
        kind: NOTE,
      });
    if (note(SUBNET_FOUND))
      parts.push({
        slot: st.slot('gs', t.subnet),
        keys: [st.sourceKey(t.subnet)],
        args: ['SN', account, charge ? 'n' : outcome],
        kind: NOTE,
      });
    if (t.fingerprint !== undefined && note(FINGERPRINT_FOUND))
      parts.push({
        slot: st.slot('gs', t.fingerprint),
        keys: [st.sourceKey(t.fingerprint)],
        args: ['SN', account, outcome],
        kind: NOTE,
      });
  }

  /**
   * Sends an operation's parts as units of the state's batch: all as one on a standalone Redis (one call,
   * so a login's work is atomic), one per slot on a Cluster. Resolves with the operation's result when
   * every unit has answered.
   */
  private send<T>(op: Op<T>, parts: Part[], now: number): Promise<T> {
    const st = this.state;
    const context: LoginContext = { session: this.id, now: num(now), cap: num(this.budget.capMs(now)) };
    const promise = new Promise<T>((resolve, reject) => {
      op.resolve = resolve;
      op.reject = reject;
    });
    if (!st.cluster || parts.length === 1) {
      op.pending = 1;
      st.enqueue(new LoginUnit(op, parts, context));
      return promise;
    }
    const groups = bySlot(parts);
    op.pending = groups.length;
    for (const group of groups) st.enqueue(new LoginUnit(op, group, context));
    return promise;
  }

  /** The rejection of an operation whose call failed: OFFLINE, for the guard's offline path, unless the state fails closed. */
  failure(err: unknown): unknown {
    const st = this.state;
    st.stats.fallbacks++;
    if (st.onError !== 'closed') return OFFLINE;
    return err instanceof SluiceError
      ? err
      : new SluiceError(
          'ERR_SLUICE_STORE_UNAVAILABLE',
          `RedisGuardState: Redis failed: ${(err as Error)?.message ?? String(err)}`,
        );
  }
}

// What a part of a login operation is, for reading its reply.
const ACCOUNT = 0;
const ADDRESS = 1;
const SUBNET = 2;
const FINGERPRINT = 3;
const NOTE = 4;

/** One operation's part: keys of one slot, its arguments, and what it is (how its reply reads). */
interface Part {
  slot: number;
  keys: string[];
  args: string[];
  kind: number;
}

/**
 * One login operation in flight: reads its parts' replies, and settles its promise once every unit has
 * answered. Objects rather than closures: a login makes several of these per turn.
 */
abstract class Op<T> {
  resolve!: (value: T) => void;
  reject!: (err: unknown) => void;
  pending = 0;
  constructor(readonly session: LoginSession) {}
  abstract answer(kind: number, r: unknown[], i: number): number;
  abstract result(): T;
  answered(): void {
    if (--this.pending === 0) this.resolve(this.result());
  }
}

/** What a check found: a bit for each key that had a value (PAIR, ADDRESS_FOUND, ...), and the account's record as read. */
interface Found {
  readonly keys: number;
  readonly account: Uint8Array | null;
}

/** A read's part: keys of one slot, and what they are (how their values decode). */
interface ReadPart {
  slot: number;
  keys: string[];
  kind: number;
}

// What a check found, by key (LoginSession's `found`): a bit for each key that had a value.
const PAIR = 1;
const ADDRESS_FOUND = 2;
const SUBNET_FOUND = 4;
const FINGERPRINT_FOUND = 8;

/** One check's reads in flight: decodes each part's values, and settles once every read has answered. */
class CheckRead {
  resolve!: (value: LoginReads) => void;
  reject!: (err: unknown) => void;
  pending = 0;
  private readonly reads: { -readonly [K in keyof LoginReads]: LoginReads[K] } = {
    account: undefined,
    pair: undefined as unknown as Decision,
    ip: undefined,
    subnet: undefined,
    ipSource: undefined as SourceView | undefined,
    netSource: undefined,
    fingerprintSource: undefined,
  };
  constructor(
    readonly session: LoginSession,
    private readonly t: TaggedAttempt,
    private readonly now: number,
    private found: number,
  ) {}
  private accountBytes: Uint8Array | null = null;
  answer(kind: number, values: readonly (Uint8Array | null)[], i: number): number {
    const { reads, now } = this;
    const [ip, subnet, pair] = this.session.peeks;
    if (kind === ACCOUNT) {
      this.accountBytes = values[i]!;
      reads.account = accountView(values[i]!, now);
      reads.pair = pair.pair(values[i + 1]!, now);
      if (values[i + 1] !== null) this.found |= PAIR;
      return i + 2;
    }
    // A source: its view, and its bucket's peek (none for a fingerprint).
    const bytes = values[i]!;
    const spec = this.session.spec;
    if (bytes !== null)
      this.found |= kind === ADDRESS ? ADDRESS_FOUND : kind === SUBNET ? SUBNET_FOUND : FINGERPRINT_FOUND;
    if (kind === ADDRESS) {
      reads.ipSource = sourceViewOf(bytes, now, spec);
      reads.ip = ip.source(bytes, now);
    } else if (kind === SUBNET) {
      reads.netSource = sourceViewOf(bytes, now, spec);
      reads.subnet = subnet.source(bytes, now);
    } else reads.fingerprintSource = sourceViewOf(bytes, now, spec);
    return i + 1;
  }
  answered(): void {
    if (--this.pending > 0) return;
    this.session.found.set(this.t, { keys: this.found, account: this.accountBytes });
    this.resolve(this.reads);
  }
}

/** A check's read of one slot (all of it on a standalone Redis), as a unit of the state's batch. */
class LoginRead implements ReadUnit {
  readonly slot: number;
  readonly keys: string[];
  constructor(
    private readonly check: CheckRead,
    private readonly parts: ReadPart[],
  ) {
    this.slot = parts[0]!.slot;
    if (parts.length === 1) this.keys = parts[0]!.keys;
    else {
      const keys: string[] = (this.keys = []);
      for (const p of parts) for (const k of p.keys) keys.push(k);
    }
  }
  answer(values: readonly (Uint8Array | null)[], i: number): number {
    for (const p of this.parts) i = this.check.answer(p.kind, values, i);
    this.check.answered();
    return i;
  }
  fail(err: unknown): void {
    this.check.reject(this.check.session.failure(err));
  }
}

class SuccessOp extends Op<JudgedSuccess> {
  /** `judged`: the account's answer, when the notes go after it (on a Cluster). */
  constructor(
    session: LoginSession,
    private judged?: JudgedSuccess,
  ) {
    super(session);
  }
  answer(kind: number, r: unknown[], i: number): number {
    if (kind === ACCOUNT) [this.judged, i] = readSuccess(r, i);
    return i;
  }
  result(): JudgedSuccess {
    return this.judged!;
  }
}

/** Notes alone: nothing to read back. */
class NoteOp extends Op<void> {
  answer(_kind: number, _r: unknown[], i: number): number {
    return i;
  }
  result(): void {}
}

class FailOp extends Op<JudgedFailure> {
  /** `failed`: the account's answer, when the notes go after it (on a Cluster). */
  constructor(
    session: LoginSession,
    private failed?: JudgedFailure,
  ) {
    super(session);
  }
  answer(kind: number, r: unknown[], i: number): number {
    if (kind === ACCOUNT) [this.failed, i] = readFailure(r, i);
    return i;
  }
  result(): JudgedFailure {
    return this.failed!;
  }
}

/** A unit of the state's batch: an operation's parts in one slot (all of them on a standalone Redis). */
class LoginUnit<T> implements Unit {
  readonly slot: number;
  readonly keys: string[];
  readonly args: string[];
  constructor(
    private readonly op: Op<T>,
    private readonly parts: Part[],
    readonly context: LoginContext,
  ) {
    this.slot = parts[0]!.slot;
    if (parts.length === 1) {
      this.keys = parts[0]!.keys;
      this.args = parts[0]!.args;
    } else {
      const keys: string[] = (this.keys = []);
      const args: string[] = (this.args = []);
      for (const p of parts) {
        for (const k of p.keys) keys.push(k);
        for (const a of p.args) args.push(a);
      }
    }
  }
  answer(r: unknown[], i: number): number {
    for (const p of this.parts) i = this.op.answer(p.kind, r, i);
    this.op.answered();
    return i;
  }
  fail(err: unknown): void {
    this.op.reject(this.op.session.failure(err));
  }
}
