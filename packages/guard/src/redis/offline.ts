/**
 * The Redis state's login port as a Guard gets it: the LoginSession while Redis answers, and while it
 * cannot (an operation rejected with OFFLINE), the same operation on the offline state, with buckets from
 * the RedisStore's own failure policy: this process's MemoryGuardState ('local'), or empty answers
 * ('open'). With 'closed' there is no offline state, and a failed operation rejects. The limiter's twin
 * is stores/redis/failure.ts: the Guard, like a Limiter, sees one port whatever Redis does.
 */
import { createAlgorithm, type Decision, Fallback, type OnError, type Policy, type StoreTable } from 'sluice/kit';
import type { TaggedAttempt } from '../attempt.js';
import { MemoryLogin, type LoginTables } from '../memory-login.js';
import type { MemoryRecords } from '../memory-records.js';
import type { JudgedFailure, JudgedSuccess, LoginConfig, LoginPort, LoginReads } from '../state.js';
import { OFFLINE } from './login.js';

export class OfflineFallback implements LoginPort {
  /** The attempts whose check was read offline: their refusal goes straight to the offline state, as their check did. */
  private readonly readOffline = new WeakSet<TaggedAttempt>();

  constructor(
    private readonly online: LoginPort,
    private readonly offline: LoginPort,
  ) {}

  read(t: TaggedAttempt, now: number, sources: boolean, buckets?: boolean): Promise<LoginReads> {
    return (this.online.read(t, now, sources, buckets) as Promise<LoginReads>).catch(async (err: unknown) => {
      if (err !== OFFLINE) throw err;
      this.readOffline.add(t);
      return { ...(await this.offline.read(t, now, sources, buckets)), offline: true };
    });
  }

  async refuse(t: TaggedAttempt, now: number): Promise<void> {
    if (this.readOffline.has(t)) return this.offline.refuse(t, now);
    try {
      await this.online.refuse(t, now);
    } catch (err) {
      if (err !== OFFLINE) throw err;
      await this.offline.refuse(t, now);
    }
  }

  async succeed(t: TaggedAttempt, now: number, familiar: boolean | undefined): Promise<JudgedSuccess> {
    try {
      return await this.online.succeed(t, now, familiar);
    } catch (err) {
      if (err !== OFFLINE) throw err;
      return { ...(await this.offline.succeed(t, now, familiar)), offline: true };
    }
  }

  async fail(
    t: TaggedAttempt,
    passwordTag: string | undefined,
    random: () => number,
    now: number,
  ): Promise<JudgedFailure> {
    try {
      return await this.online.fail(t, passwordTag, random, now);
    } catch (err) {
      if (err !== OFFLINE) throw err;
      return { ...(await this.offline.fail(t, passwordTag, random, now)), offline: true };
    }
  }
}

/**
 * The port `online` falls back from, or `online` itself when there is none (onError 'closed': its
 * rejections stand): this process's memory records (`offline`, for 'local') or nothing known and nothing
 * kept ('open'), with the guard's buckets answered by the store's failure policy (insurance: a local
 * limiter), as a RedisStore answers its own tables while Redis cannot.
 */
export function withOffline(
  online: LoginPort,
  offline: MemoryRecords | 'open' | undefined,
  storeOnError: OnError,
  c: LoginConfig,
): LoginPort {
  if (offline === undefined) return online;
  const table = (p: Policy): StoreTable => {
    const f = new Fallback(storeOnError, { policies: [p], algorithms: [createAlgorithm(p)], clock: c.clock });
    return {
      sync: true,
      decide: (k, cost, lease) => f.decide(k, cost, lease),
      adjust: (k, d) => f.adjust(k, d),
      release: (k, l) => f.release(k, l),
      reset: (k) => f.reset(k),
    };
  };
  const tables: LoginTables = { ip: table(c.ip), subnet: table(c.subnet), pair: table(c.pair) };
  return new OfflineFallback(online, offline === 'open' ? new OpenLogin(tables) : new MemoryLogin(offline, tables, c));
}

/**
 * onError 'open' while Redis cannot: nothing is known (every account and source as if new) and nothing is
 * kept; the buckets answer as the store's 'open' policy does (allowed, marked as a store error).
 */
class OpenLogin implements LoginPort {
  constructor(private readonly tables: LoginTables) {}

  read(t: TaggedAttempt, _now: number, sources: boolean, buckets = true): LoginReads {
    const peek = (table: StoreTable, key: string) => table.decide(key, 0, undefined) as Decision;
    const { ip, subnet, pair } = this.tables;
    const stranger = sources && buckets;
    return {
      account: undefined,
      pair: buckets ? peek(pair, t.pairKey) : undefined,
      ip: stranger ? peek(ip, t.ipKey) : undefined,
      subnet: stranger ? peek(subnet, t.subnetKey) : undefined,
      ipSource: undefined,
      netSource: undefined,
      fingerprintSource: undefined,
    };
  }

  refuse(): void {}

  succeed(): JudgedSuccess {
    return { path: 'unfamiliar', unfamiliarFailuresBefore: 0 };
  }

  fail(_t: TaggedAttempt, _passwordTag: string | undefined, random: () => number): JudgedFailure {
    random(); // the backoff's draw, as a port that counts it makes (the guard's random sequence is replayed)
    return { counted: false, failures: 0, total: 0, path: 'unfamiliar' }; // kept nowhere: not counted
  }
}
