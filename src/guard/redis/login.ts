/**
 * A Guard's logins on Redis: check() is one operation of the state's batch and record() one more, each
 * carrying everything the guard needs from the account (with its account+address pair bucket, in the
 * account's slot) and from the address, subnet and fingerprint (each source's record holds its bucket).
 * On a standalone Redis an operation is one script call shared with every other login of the same turn of
 * the event loop; on a Cluster it is one call per slot involved, sent together, except that a failure's
 * source writes wait for the account's answer (a repeated wrong password counts nowhere).
 *
 * Decisions stay the guard's (guard.ts): this file only moves the reads and writes its memory path makes,
 * with the same arithmetic in the script (token-bucket.lua is the limiter's twin of core/token-bucket.ts;
 * backoffMs is backoff.ts's). When Redis cannot answer, each operation rejects with OFFLINE unless the
 * state fails closed, and the guard then decides on `offline` as its memory path does.
 */
import { createHash } from 'node:crypto';
import { createAlgorithm, makeDecision, SluiceError } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
import { Fallback, type OnError } from '../../stores/redis/failure.js';
import type { StoreTable } from '../../stores/store.js';
import type { TaggedAttempt } from '../attempt.js';
import type { AccountView, GuardState, JudgedFailure, JudgedSuccess, LoginConfig, LoginPort, OfflineParts, SourceReads, SourceSpec } from '../state.js';
import type { ConnectionStats } from '../../stores/redis/connection.js';
import { checkTags, num, readAccountView, readFailure, readSourceView, readSuccess, type Unit } from './wire.js';

/** The rejection of a login operation whose call failed, when the state does not fail closed. */
export const OFFLINE = new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'RedisGuardState: Redis did not answer; the guard decides on its offline state');

/** One operation's part: keys of one slot, its arguments, and how to read its reply. */
interface Part {
  slot: number;
  keys: string[];
  args: string[];
  answer(r: unknown[], i: number): number;
}

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
  offline(): GuardState | undefined;
  enqueue(unit: Unit): void;
}

export class LoginSession implements LoginPort {
  readonly offline: OfflineParts | undefined;
  private readonly id: string;
  private readonly bucketDays: [Policy, Policy, Policy];

  constructor(private readonly state: LoginHost, c: LoginConfig, storeOnError: OnError) {
    for (const p of [c.ip, c.subnet, c.pair]) {
      if (p.algorithm !== 'token-bucket') throw new Error(`sluice internal: the guard's bucket '${p.name}' must be a token bucket`);
    }
    if (c.ip.windowMs !== 86_400_000 || c.subnet.windowMs !== 86_400_000 || c.pair.windowMs !== 3_600_000) throw new Error('sluice internal: the guard script fixes its buckets\' windows (1d, 1d, 1h)');
    const s = c.spec;
    const b = c.backoff;
    // guard.lua's session(): the order is the script's.
    const constants = [
      num(s.distinctWindowMs), num(s.longDistinctWindowMs ?? s.distinctWindowMs), num(s.ratioWindowMs), String(s.maxDistinct),
      num(c.memoryMs), num(c.familiarMs), String(c.maxFamiliar),
      String(b.freeFailures), num(b.baseMs), num(b.maxMs), String(b.jitter),
      String(c.ip.limit), String(c.ip.burst), String(c.subnet.limit), String(c.subnet.burst), String(c.pair.limit), String(c.pair.burst),
    ];
    // The signature the script caches the parsed constants by: the constants themselves, hashed.
    const signature = createHash('sha1').update(constants.join(',')).digest('base64url').slice(0, 16);
    this.id = String(state.addSession([signature, ...constants]));
    this.spec = s;
    this.bucketDays = [c.ip, c.subnet, c.pair];
    const offline = state.offline();
    const table = (p: Policy): StoreTable => {
      const f = new Fallback(storeOnError, { policies: [p], algorithms: [createAlgorithm(p)], clock: c.clock });
      return { sync: true, decide: (k, cost, lease) => f.decide(k, cost, lease), adjust: (k, d) => f.adjust(k, d), release: (k, l) => f.release(k, l), reset: (k) => f.reset(k) };
    };
    this.offline = offline === undefined ? undefined : { state: offline, ip: table(c.ip), subnet: table(c.subnet), pair: table(c.pair) };
  }

  private readonly spec: SourceSpec;

  isOffline(err: unknown): boolean {
    return err === OFFLINE;
  }

  /**
   * check()'s reads: the account with its pair bucket, and with `sources` the address's and subnet's
   * records and buckets and the fingerprint's record.
   */
  read(t: TaggedAttempt, now: number, sources: boolean): Promise<[AccountView | undefined, SourceReads]> {
    const st = this.state;
    const at = num(now);
    const [ipPolicy, netPolicy, pairPolicy] = this.bucketDays;
    let account: AccountView | undefined;
    const reads: SourceReads = [undefined, undefined, undefined as unknown as Decision, undefined, undefined, undefined];
    const parts: Part[] = [
      {
        slot: st.slot('ga', t.account),
        keys: [st.accountKey(t.account), st.pairKey(t.account, t.address)],
        args: ['AR', this.id, at],
        answer: (r, i) => {
          [account, i] = readAccountView(r, i);
          [reads[2], i] = readDecision(r, i, pairPolicy);
          return i;
        },
      },
    ];
    if (sources) {
      const source = (tag: string, bucket: 'i' | 'n' | '-', viewAt: 3 | 4 | 5, decisionAt: 0 | 1, policy: Policy): Part => ({
        slot: st.slot('gs', tag),
        keys: [st.sourceKey(tag)],
        args: ['SR', this.id, at, bucket],
        answer: (r, i) => {
          if (Number(r[i]) === 0) i++;
          else [reads[viewAt], i] = readSourceView(r, i + 1, now, this.spec);
          if (bucket !== '-') [reads[decisionAt], i] = readDecision(r, i, policy);
          return i;
        },
      });
      parts.push(source(t.address, 'i', 3, 0, ipPolicy), source(t.subnet, 'n', 4, 1, netPolicy));
      if (t.fingerprint !== undefined) parts.push(source(t.fingerprint, '-', 5, 0, ipPolicy));
    }
    return this.sendParts(parts).then(() => [account, reads]);
  }

  /** record()'s success: the account's success (its path judged there), the pair bucket forgotten, every source noted. */
  succeed(t: TaggedAttempt, now: number): Promise<JudgedSuccess> {
    checkTags(t.sources, 'source');
    const st = this.state;
    let judged!: JudgedSuccess;
    const parts: Part[] = [
      {
        slot: st.slot('ga', t.account),
        keys: [st.accountKey(t.account), st.pairKey(t.account, t.address)],
        args: ['AS', this.id, num(now), String(t.sources.length), ...t.sources],
        answer: (r, i) => {
          [judged, i] = readSuccess(r, i);
          return i;
        },
      },
      ...this.notes(t, now, false),
    ];
    return this.sendParts(parts).then(() => judged);
  }

  /**
   * record()'s failure: counted on the account unless the password is one of its last three wrong ones,
   * then its backoff lock (with `random` for the jitter, drawn here for every failure rather than only a
   * counted one), the pair bucket, and every source noted with the address's and subnet's buckets
   * charged (not for an allow-listed address).
   */
  fail(t: TaggedAttempt, passwordTag: string | undefined, random: number, now: number): Promise<JudgedFailure> {
    checkTags(t.sources, 'source');
    if (passwordTag !== undefined) checkTags([passwordTag], 'password');
    const st = this.state;
    const notes = this.notes(t, now, true);
    // On a standalone Redis the source writes ride in the same call, skipped by the script when the
    // failure does not count; on a Cluster they are in other slots, so they wait for the answer.
    const together = !st.cluster;
    let failed!: JudgedFailure;
    const account: Part = {
      slot: st.slot('ga', t.account),
      keys: [st.accountKey(t.account), st.pairKey(t.account, t.address)],
      args: ['AF', this.id, num(now), passwordTag ?? '', String(random), String(t.sources.length), ...t.sources, together ? String(notes.length) : '0'],
      answer: (r, i) => {
        [failed, i] = readFailure(r, i);
        return i;
      },
    };
    if (together) return this.sendParts([account, ...notes]).then(() => failed);
    return this.sendParts([account]).then(() => (failed.counted ? this.sendParts(notes).then(() => failed) : failed));
  }

  /** The SN operations of an outcome on the address, subnet and fingerprint. */
  private notes(t: TaggedAttempt, now: number, failed: boolean): Part[] {
    const st = this.state;
    const at = num(now);
    const charge = failed && !t.standing.allowed;
    const note = (tag: string, what: string): Part => ({ slot: st.slot('gs', tag), keys: [st.sourceKey(tag)], args: ['SN', this.id, at, t.account, what], answer: (_r, i) => i });
    const outcome = failed ? '1' : '0';
    const parts = [note(t.address, charge ? 'i' : outcome), note(t.subnet, charge ? 'n' : outcome)];
    if (t.fingerprint !== undefined) parts.push(note(t.fingerprint, outcome));
    return parts;
  }

  /**
   * Sends parts as units of the state's batch: all as one on a standalone Redis (one call, so a login's
   * work is atomic), one per slot on a Cluster. Resolves when every one has answered.
   */
  private sendParts(parts: Part[]): Promise<void> {
    const st = this.state;
    const offline = (err: unknown) => {
      st.stats.fallbacks++;
      if (st.onError !== 'closed') return OFFLINE;
      return err instanceof SluiceError ? err : new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisGuardState: Redis failed: ${(err as Error)?.message ?? String(err)}`);
    };
    if (!st.cluster || parts.length === 1) {
      return new Promise((resolve, reject) => st.enqueue(unitOf(parts, resolve, (err) => reject(offline(err)))));
    }
    const bySlot = new Map<number, Part[]>();
    for (const p of parts) {
      const group = bySlot.get(p.slot);
      if (group === undefined) bySlot.set(p.slot, [p]);
      else group.push(p);
    }
    return Promise.all([...bySlot.values()].map((group) => new Promise<void>((resolve, reject) => st.enqueue(unitOf(group, resolve, (err) => reject(offline(err))))))).then(() => undefined);
  }
}

function unitOf(parts: Part[], resolve: () => void, fail: (err: unknown) => void): Unit {
  const keys = parts.length === 1 ? parts[0]!.keys : parts.flatMap((p) => p.keys);
  const args = parts.length === 1 ? parts[0]!.args : parts.flatMap((p) => p.args);
  return {
    slot: parts[0]!.slot,
    keys,
    args,
    session: true,
    answer: (r, i) => {
      for (const p of parts) i = p.answer(r, i);
      resolve();
      return i;
    },
    fail,
  };
}

/** A bucket peek as the script replies it: allowed (1 or 0), remaining, resetAfterMs, retryAfterMs. */
function readDecision(r: unknown[], i: number, p: Policy): [Decision, number] {
  return [makeDecision(Number(r[i]) === 1, p.limit, Number(r[i + 1]), Number(r[i + 2]), Number(r[i + 3]), 0, p.name, undefined, undefined), i + 4];
}
