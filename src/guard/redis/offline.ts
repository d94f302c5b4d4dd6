/**
 * The Redis state's login port as a Guard gets it: the LoginSession while Redis answers, and while it
 * cannot (an operation rejected with OFFLINE), the same operation on the offline state, with buckets from
 * the RedisStore's own failure policy: this process's MemoryGuardState ('local'), or empty answers
 * ('open'). With 'closed' there is no offline state, and a failed operation rejects. The limiter's twin
 * is stores/redis/failure.ts: the Guard, like a Limiter, sees one port whatever Redis does.
 */
import { createAlgorithm } from '../../core/index.js';
import type { Policy } from '../../core/index.js';
import { Fallback, type OnError } from '../../stores/redis/failure.js';
import type { StoreTable } from '../../stores/store.js';
import type { TaggedAttempt } from '../attempt.js';
import { StateLogin } from '../state-login.js';
import type { GuardState, JudgedFailure, JudgedSuccess, LoginConfig, LoginPort, LoginReads } from '../state.js';
import { OFFLINE } from './login.js';

export class OfflineFallback implements LoginPort {
  /** The attempts whose check was read offline: their refusal goes straight to the offline state, as their check did. */
  private readonly readOffline = new WeakSet<TaggedAttempt>();

  constructor(
    private readonly online: LoginPort,
    private readonly offline: LoginPort,
  ) {}

  read(t: TaggedAttempt, now: number, sources: boolean, buckets?: boolean): Promise<LoginReads> {
    return (this.online.read(t, now, sources, buckets) as Promise<LoginReads>).catch((err: unknown) => {
      if (err !== OFFLINE) throw err;
      this.readOffline.add(t);
      return this.offline.read(t, now, sources, buckets);
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
      return this.offline.succeed(t, now, familiar);
    }
  }

  async fail(t: TaggedAttempt, passwordTag: string | undefined, random: () => number, now: number): Promise<JudgedFailure> {
    try {
      return await this.online.fail(t, passwordTag, random, now);
    } catch (err) {
      if (err !== OFFLINE) throw err;
      return this.offline.fail(t, passwordTag, random, now);
    }
  }
}

/**
 * The port `online` falls back from: `state` (the offline state) with buckets answered by the store's
 * failure policy (insurance: a local limiter), as a RedisStore answers its own tables while Redis cannot.
 * `online` itself when there is no offline state (onError 'closed': its rejections stand).
 */
export function withOffline(online: LoginPort, state: GuardState | undefined, storeOnError: OnError, c: LoginConfig): LoginPort {
  if (state === undefined) return online;
  const table = (p: Policy): StoreTable => {
    const f = new Fallback(storeOnError, { policies: [p], algorithms: [createAlgorithm(p)], clock: c.clock });
    return { sync: true, decide: (k, cost, lease) => f.decide(k, cost, lease), adjust: (k, d) => f.adjust(k, d), release: (k, l) => f.release(k, l), reset: (k) => f.reset(k) };
  };
  const offline = new StateLogin(state, { ip: table(c.ip), subnet: table(c.subnet), pair: table(c.pair) }, { spec: c.spec, memoryMs: c.memoryMs, familiarMs: c.familiarMs, maxFamiliar: c.maxFamiliar, backoff: c.backoff, judging: false });
  return new OfflineFallback(online, offline);
}
