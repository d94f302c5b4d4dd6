// Reference models: the textbook form of each algorithm, written for clarity rather than speed, kept
// independent of src/ so the property tests compare two implementations, not one with itself.
// Times are whole milliseconds and token amounts are scaled by the window, so the models are exact.

export interface Step {
  at: number;
  key: string;
  cost: number;
}

export interface Model {
  decide(key: string, now: number, cost: number): boolean;
}

/** `limit` (and `burst`), where given, is the call's own limit: per-call limits share the key's state. */
export class FixedWindowModel implements Model {
  private readonly counts = new Map<string, number>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}
  decide(key: string, now: number, cost: number, limit = this.limit): boolean {
    const id = `${key}@${Math.floor(now / this.windowMs)}`;
    const used = this.counts.get(id) ?? 0;
    if (used + cost > limit) return false;
    this.counts.set(id, used + cost);
    return true;
  }
}

/** The exact sliding window: sums admitted costs in (now − W, now]. */
export class SlidingLogModel implements Model {
  readonly admitted = new Map<string, { at: number; cost: number }[]>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}
  countIn(key: string, now: number): number {
    let sum = 0;
    for (const r of this.admitted.get(key) ?? []) if (r.at > now - this.windowMs && r.at <= now) sum += r.cost;
    return sum;
  }
  decide(key: string, now: number, cost: number, limit = this.limit): boolean {
    if (this.countIn(key, now) + cost > limit) return false;
    if (cost > 0) {
      const log = this.admitted.get(key) ?? [];
      log.push({ at: now, cost });
      this.admitted.set(key, log);
    }
    return true;
  }
}

/** Tokens (scaled by W) refill at `limit` per ms up to burst·W; a request takes cost·W. */
export class TokenBucketModel implements Model {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly burst: number,
  ) {}
  /** Tokens short of admitting `cost` now (negative: to spare), in tokens. */
  shortfall(key: string, now: number, cost: number): number {
    const full = this.burst * this.windowMs;
    const b = this.buckets.get(key) ?? { tokens: full, at: now };
    return (cost * this.windowMs - Math.min(full, b.tokens + (now - b.at) * this.limit)) / this.windowMs;
  }
  decide(key: string, now: number, cost: number): boolean {
    const full = this.burst * this.windowMs;
    const b = this.buckets.get(key) ?? { tokens: full, at: now };
    const tokens = Math.min(full, b.tokens + (now - b.at) * this.limit);
    if (tokens < cost * this.windowMs) return false;
    this.buckets.set(key, { tokens: tokens - cost * this.windowMs, at: now });
    return true;
  }
}

/** Water (scaled by W) drains at `limit` per ms; a request pours cost·W into a bucket of burst·W. */
export class LeakyMeterModel implements Model {
  private readonly buckets = new Map<string, { water: number; at: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly burst: number,
  ) {}
  decide(key: string, now: number, cost: number): boolean {
    const b = this.buckets.get(key) ?? { water: 0, at: now };
    const water = Math.max(0, b.water - (now - b.at) * this.limit);
    if (water + cost * this.windowMs > this.burst * this.windowMs) return false;
    this.buckets.set(key, { water: water + cost * this.windowMs, at: now });
    return true;
  }
}

/**
 * The sliding-window counter, written as counts per epoch-aligned sub-window: the k newest sub-windows
 * count in full and the one before them by the fraction of it still inside (now − W, now].
 */
export class SlidingCounterModel implements Model {
  private readonly counts = new Map<string, number>();
  private readonly w: number;
  constructor(
    private readonly limit: number,
    windowMs: number,
    private readonly k: number,
  ) {
    this.w = windowMs / k;
  }
  private count(key: string, i: number): number {
    return this.counts.get(`${key}@${i}`) ?? 0;
  }
  /** [sum of the k full sub-windows, count of the partial one, ms of it still inside the window]. */
  parts(key: string, now: number): [full: number, old: number, insideMs: number] {
    const j = Math.floor(now / this.w);
    let full = 0;
    for (let i = j - this.k + 1; i <= j; i++) full += this.count(key, i);
    return [full, this.count(key, j - this.k), this.w - (now - j * this.w)];
  }
  /** The estimate of requests in (now − W, now], times w. */
  scaledEstimate(key: string, now: number): number {
    const [full, old, insideMs] = this.parts(key, now);
    return full * this.w + old * insideMs;
  }
  decide(key: string, now: number, cost: number, limit = this.limit): boolean {
    if (this.scaledEstimate(key, now) + cost * this.w > limit * this.w) return false;
    const id = `${key}@${Math.floor(now / this.w)}`;
    this.counts.set(id, (this.counts.get(id) ?? 0) + cost);
    return true;
  }
}

/**
 * GCRA as the textbook has it (one theoretical arrival time per key): with T = W / limit and
 * τ = T·(burst − 1), a request of cost c passes iff now >= max(TAT, now) + c·T − τ − T, and then
 * TAT := max(TAT, now) + c·T. Its state is a time, so a call with another limit and burst reads the same
 * TAT with its own T and τ: the reference for every bucket under per-call limits (the token bucket keeps
 * how far from full it is in time too). Exact where W / limit is whole milliseconds.
 */
export class GcraModel implements Model {
  private readonly tat = new Map<string, number>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly burst: number,
  ) {}
  decide(key: string, now: number, cost: number, limit = this.limit, burst = this.burst): boolean {
    const t = this.windowMs / limit;
    const base = Math.max(this.tat.get(key) ?? now, now);
    if (now < base + cost * t - t * (burst - 1) - t) return false;
    if (cost > 0) this.tat.set(key, base + cost * t);
    return true;
  }
}

/** Requests in flight, none released: each admitted cost is held for `window` ms. */
export class ConcurrencyModel implements Model {
  private readonly leases = new Map<string, { until: number; cost: number }[]>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}
  decide(key: string, now: number, cost: number, limit = this.limit): boolean {
    const held = (this.leases.get(key) ?? []).filter((l) => l.until > now);
    if (held.reduce((sum, l) => sum + l.cost, 0) + cost > limit) return false;
    if (cost > 0) held.push({ until: now + this.windowMs, cost });
    this.leases.set(key, held);
    return true;
  }
}

/**
 * Bans (blockFor) around any model: a request the model denies starts a ban of
 * min(max, duration · factor^k) ms, k the earlier bans still remembered (one forgotten per `decay` after
 * the last ban ended); during a ban every request is denied and nothing changes.
 */
export class BanModel {
  private readonly bans = new Map<string, { end: number; count: number }>();
  constructor(
    private readonly inner: (key: string, now: number, cost: number) => boolean,
    private readonly ban: { durationMs: number; factor: number; maxMs: number; decayMs: number },
  ) {}
  decide(key: string, now: number, cost: number): { allowed: boolean; blocked: boolean; end: number } {
    const b = this.bans.get(key) ?? { end: 0, count: 0 };
    if (now < b.end) return { allowed: false, blocked: true, end: b.end };
    if (this.inner(key, now, cost)) return { allowed: true, blocked: false, end: 0 };
    if (cost === 0) return { allowed: false, blocked: false, end: 0 };
    const { durationMs, factor, maxMs, decayMs } = this.ban;
    const k = factor === 1 || b.count === 0 ? 0 : Math.max(0, b.count - Math.floor((now - b.end) / decayMs));
    const ms = Math.min(maxMs, durationMs * factor ** k);
    // Past the cap, more bans need not be remembered: the count stops where the cap is reached.
    let capAt = 0;
    while (capAt < k && durationMs * factor ** capAt < maxMs) capAt++;
    this.bans.set(key, { end: now + ms, count: Math.min(k, capAt) + 1 });
    return { allowed: false, blocked: true, end: now + ms };
  }
}
