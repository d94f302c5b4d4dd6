/**
 * Bans (`blockFor`): after a request the policy denies, the key stays denied for the ban, whatever its
 * algorithm refills meanwhile, as rate-limiter-flexible's `blockDuration` and @fastify/rate-limit's `ban`.
 * This is the one place a denial changes state: the denial that starts a ban records it. Requests during a
 * ban (peeks included) are denied with `blocked` set and change nothing; a ban is never lengthened by
 * them. With escalation, ban n lasts min(max, duration × factor^(n − 1)), and one earlier ban is forgotten
 * per `decay` after the last ban ended (fail2ban's bantime.increment, with a cap and forgetting).
 *
 * State: the algorithm's own, then 2 slots: [ban end (0: none), bans counted]. All zeros is idle.
 * Lua twin: stores/redis/scripts/block.lua, operation for operation.
 */
import { ceilMs, retryMs } from './time.js';
import type { Block, ObjectAlgorithm, Policy, SlabAlgorithm, Verdict } from './types.js';

/** How long a ban lasts that comes after `prior` remembered bans; and the count to remember after it. */
export function banLength(b: Block, prior: number): [ms: number, count: number] {
  let ms = b.durationMs;
  let n = 0;
  // Repeated multiplication, not factor ** n: both languages round each product alike, pow need not.
  while (n < prior && ms < b.maxMs) {
    ms *= b.factor;
    n++;
  }
  if (ms > b.maxMs) ms = b.maxMs;
  // Counting beyond the cap would only lengthen how long the key is remembered.
  return [Math.ceil(ms), n + 1];
}

/** Bans remembered at `now` of `count` counted when the last one ended at `end`. */
export function remembered(b: Block, count: number, end: number, now: number): number {
  if (count === 0 || b.factor === 1) return 0;
  const forgotten = Math.floor((now - end) / b.decayMs);
  return forgotten >= count ? 0 : forgotten > 0 ? count - forgotten : count;
}

/** When ban state is as if unused: the ban over and every counted ban forgotten. */
function banIdleAt(b: Block, end: number, count: number): number {
  if (end === 0) return -Infinity;
  return b.factor === 1 ? end : end + count * b.decayMs;
}

/** Denies `v` for the ban that ends at `end`. */
function banned(v: Verdict, now: number, end: number): void {
  v.allowed = false;
  v.remaining = 0;
  v.retryAfterMs = retryMs(end - now);
  if (v.resetAfterMs < end - now) v.resetAfterMs = ceilMs(end - now);
  v.delayMs = 0;
  v.blocked = true;
}

/** Denies `v`, which its algorithm denied, for a ban of `ms` starting now; a longer wait of its own stands. */
function startBan(v: Verdict, now: number, ms: number): void {
  const own = v.retryAfterMs;
  banned(v, now, now + ms);
  if (own > v.retryAfterMs) v.retryAfterMs = own;
}

export class BlockingSlab implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots: number;
  readonly policy: Policy;
  private readonly n: number;
  private readonly block: Block;

  constructor(private readonly inner: SlabAlgorithm) {
    this.policy = inner.policy;
    this.n = inner.slots;
    this.slots = inner.slots + 2;
    this.block = inner.policy.block!;
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const n = this.n;
    const end = s[o + n]!;
    v.bans = false;
    if (now < end) {
      v.resetAfterMs = 0;
      banned(v, now, end);
      return;
    }
    v.blocked = false;
    this.inner.evaluate(s, o, now, cost, v);
    const next = v.next;
    if (v.allowed) {
      next[n] = end;
      next[n + 1] = s[o + n + 1]!;
      return;
    }
    if (cost === 0) return;
    const [ms, count] = banLength(this.block, remembered(this.block, s[o + n + 1]!, end, now));
    for (let i = 0; i < n; i++) next[i] = s[o + i]!;
    next[n] = now + ms;
    next[n + 1] = count;
    v.bans = true;
    startBan(v, now, ms);
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    this.inner.adjust(s, o, now, delta);
  }

  idleAt(s: Float64Array, o: number): number {
    const a = this.inner.idleAt(s, o);
    const b = banIdleAt(this.block, s[o + this.n]!, s[o + this.n + 1]!);
    return a > b ? a : b;
  }
}

/** An object algorithm's state with its ban. */
export interface Banned<S> {
  inner: S | undefined;
  end: number;
  count: number;
}

export class BlockingObject<S> implements ObjectAlgorithm<Banned<S>> {
  readonly kind = 'object';
  readonly policy: Policy;
  private readonly block: Block;

  constructor(private readonly inner: ObjectAlgorithm<S>) {
    this.policy = inner.policy;
    this.block = inner.policy.block!;
  }

  evaluate(st: Banned<S> | undefined, now: number, cost: number, v: Verdict): void {
    v.bans = false;
    if (st !== undefined && now < st.end) {
      v.resetAfterMs = 0;
      banned(v, now, st.end);
      return;
    }
    v.blocked = false;
    this.inner.evaluate(st?.inner, now, cost, v);
    if (v.allowed || cost === 0) return;
    const [ms] = banLength(this.block, st === undefined ? 0 : remembered(this.block, st.count, st.end, now));
    v.bans = true;
    startBan(v, now, ms);
  }

  ban(st: Banned<S> | undefined, now: number): Banned<S> {
    const [ms, count] = banLength(this.block, st === undefined ? 0 : remembered(this.block, st.count, st.end, now));
    const out = st ?? { inner: undefined, end: 0, count: 0 };
    out.end = now + ms;
    out.count = count;
    return out;
  }

  commit(st: Banned<S> | undefined, now: number, cost: number, leaseId: string | undefined): Banned<S> {
    const out = st ?? { inner: undefined, end: 0, count: 0 };
    out.inner = this.inner.commit(out.inner, now, cost, leaseId);
    return out;
  }

  adjust(st: Banned<S> | undefined, now: number, delta: number): Banned<S> | undefined {
    const inner = this.inner.adjust(st?.inner, now, delta);
    if (st === undefined) return inner === undefined ? undefined : { inner, end: 0, count: 0 };
    st.inner = inner;
    return st;
  }

  idleAt(st: Banned<S> | undefined): number {
    if (st === undefined) return -Infinity;
    const a = this.inner.idleAt(st.inner);
    const b = banIdleAt(this.block, st.end, st.count);
    return a > b ? a : b;
  }
}
