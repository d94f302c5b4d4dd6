/**
 * The 'regions' strategy: one fixed-window limit per key for the whole world, every decision made in the
 * region's own home Redis (no round trip between regions on a decision's path).
 *
 * Each region's home Redis keeps, per key and window, a G-counter: one count per region. A decision
 * (scripts/regions-decide.lua) admits a cost iff own + Σ peers' counts + cost ≤ limit, and adds it to its
 * own region's count only. Every `exchangeMs` each process pushes, for the keys it decided on, its
 * region's count as its last reply carried it (the whole count, not a delta) to every peer's Redis,
 * where regions-merge.lua keeps the max per (window, region): a push repeated, reordered, or replayed
 * after a partition never counts twice, and several processes of one region may push the same key.
 *
 * The bound (docs/distributed.md, "Regions"). Let S = exchangeMs + the one-way delay to a peer: an
 * admission is in its peers' Redis within S. Take the region i whose last admission in a window, at
 * time t, is the latest. Then own_i + Σ_{j≠i} c_j(t − S) ≤ limit, and own_i is region i's whole count,
 * so the window admits at most limit + Σ_{j≠i} (what region j admitted in (t − S, t]), and never more
 * than regions × limit.
 *
 * Cut off. Every push also stamps, in the peer's Redis, when that peer last heard from this region
 * (regions-merge.lua); every exchange this process reads its own Redis's stamps (regions-heard.lua).
 * A peer not heard from for `partitionAfterMs` counts as max(its count, ⌈share × limit⌉). A region cut
 * off from all the others then admits at most limit − Σ_{others} ⌈share_j × limit⌉ ≤ its share, never
 * the whole limit; the others reserve its share for it; a region that is down costs the others its share
 * and nothing more. When the link returns, pushes resume with whole counts and max merges them: nothing
 * is counted twice and nothing is lost.
 */
import { makeDecision, SluiceError } from '../../core/index.js';
import type { Decision } from '../../core/index.js';
import { unrefTimer, utf8Length } from '../../runtime.js';
import { batches } from '../../stores/redis/batch.js';
import type { PeerRegion } from '../../stores/script-runner.js';
import type { StoreTable } from '../../stores/store.js';
import type { StrategySpec } from '../runner.js';
import type { Regions } from './options.js';

/** What this process last learnt of its region's count of a key, and what each peer has been sent of it. */
interface KeyCount {
  window: number;
  own: number;
  /** Local time at or before the window's end on the home Redis's clock. */
  deadline: number;
  /** Per peer (in `peers` order): the count sent (maybe not yet acknowledged), and acknowledged. */
  sent: number[];
  acked: number[];
}

export interface RegionsStats {
  decisions: number;
  fallbacks: number;
  /** Pushes sent to peers (heartbeats included), and failed or refused. */
  messages: number;
  failedMessages: number;
  /** Bytes of those pushes as RESP requests (each reply is one integer). */
  bytes: number;
  /** Key counts pushed. */
  entries: number;
  /** Keys forgotten to stay within maxKeys before every peer had their count. */
  dropped: number;
  /**
   * The longest time between two exchanges of this process (exchangeMs, plus how late a busy event loop
   * ran the timer): with the links' one-way delay, the S of the bound as it really was.
   */
  longestGapMs: number;
}

/**
 * Most pushes awaiting a peer's answer at once, per peer: at least the round trip over exchangeMs, or
 * the pushes fall behind the exchange and S of the bound grows. A push to a Redis Cluster goes as a call
 * per hash slot (up to PUSH_CHUNK calls; stores/redis/peers.ts bounds the peer's calls accordingly).
 */
const MAX_PUSHES_IN_FLIGHT = 32;
/** Most key counts per push (one script call). */
const PUSH_CHUNK = 1000;
/** Most decisions per script call. */
const MAX_BATCH = 64;

interface QueuedDecision {
  readonly key: string;
  /** The key's hash slot on a Cluster home (0 on a standalone one): a call carries one slot's decisions. */
  readonly slot: number;
  readonly cost: number;
  readonly force: boolean;
  resolve(reply: number[]): void;
  reject(err: unknown): void;
}

/** A key count in a push: on a Cluster peer, the push goes as a call per slot. */
interface Pushed {
  readonly key: string;
  readonly st: KeyCount;
  readonly slot: number;
}

const respBulk = (s: string): number => {
  const n = utf8Length(s);
  return 1 + String(n).length + 2 + n + 2;
};

export class RegionsTable implements StoreTable {
  readonly sync = false;
  readonly stats: RegionsStats = {
    decisions: 0,
    fallbacks: 0,
    messages: 0,
    failedMessages: 0,
    bytes: 0,
    entries: 0,
    dropped: 0,
    longestGapMs: 0,
  };
  private readonly keys = new Map<string, KeyCount>();
  private readonly suffix: string;
  private readonly heardKey: string;
  /** Per peer: the floor it counts at while cut off, and whether it is cut off now. */
  private readonly floors: number[];
  private readonly cut: boolean[];
  private peerArgs: string[] = [];
  private readonly inFlight: number[];
  /**
   * Per peer whose last push failed: when (this.spec.clock) it may get its next push, one at a time,
   * until one is answered; undefined for a peer that answers.
   */
  private readonly failing: (number | undefined)[];
  /** Per peer: the keys whose count went up since they were last sent to it (an exchange costs what changed, not every key). */
  private dirty: Set<string>[];
  private lastSweep = -Infinity;
  private queue: QueuedDecision[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private lastExchange = -1;
  private readonly runOn: NonNullable<StrategySpec['runner']['runOn']>;
  /**
   * Whether the home, and each peer, is a Redis Cluster: there a script call carries one hash slot's keys
   * (every key of an id is in its slot, stores/redis/keys.ts), so decisions go a call per slot, a push to
   * a peer a call per slot, and the peer's "heard" stamp (a key of its own slot) a call of its own.
   */
  private readonly homeCluster: boolean;
  private readonly peerCluster: boolean[];
  /** Per Cluster peer: whether its heartbeat (the stamp) awaits an answer. */
  private readonly beating: boolean[];
  private readonly slotOf: (key: string) => number;

  constructor(
    private readonly spec: StrategySpec,
    readonly regions: Regions,
  ) {
    const runOn = spec.runner.runOn;
    if (runOn === undefined)
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `strategy 'regions' needs a RedisStore with the 'regions' option`,
      );
    this.runOn = runOn;
    this.homeCluster = spec.runner.isCluster?.() ?? false;
    this.peerCluster = regions.peers.map((p) => spec.runner.isCluster?.(p) ?? false);
    this.beating = regions.peers.map(() => false);
    const slotOf = spec.runner.slotOf;
    if ((this.homeCluster || this.peerCluster.includes(true)) && slotOf === undefined)
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `strategy 'regions' on a Redis Cluster needs a store that names slots`,
      );
    this.slotOf = slotOf ?? (() => 0);
    this.suffix = `${spec.policy.name}:rg`;
    this.heardKey = spec.runner.keyFor('regions', 'heard');
    const limit = spec.policy.limit;
    this.floors = regions.peers.map((p) => Math.ceil(limit * regions.shares.get(p.name)!));
    // Until this process has read who its Redis heard from, every peer counts as cut off: never the whole limit.
    this.cut = regions.peers.map(() => true);
    this.inFlight = regions.peers.map(() => 0);
    this.failing = regions.peers.map(() => undefined);
    this.dirty = regions.peers.map(() => new Set());
    this.updatePeerArgs();
  }

  /** The peers counted as cut off now (not heard from for partitionAfterMs), by name. */
  cutOff(): string[] {
    return this.regions.peers.filter((_, i) => this.cut[i]).map((p) => p.name);
  }

  decide(key: string, cost: number): Promise<Decision> {
    return this.run(key, cost, false);
  }

  private async run(key: string, cost: number, force: boolean): Promise<Decision> {
    this.stats.decisions++;
    this.start();
    const p = this.spec.policy;
    const sentAt = this.spec.clock();
    let r: number[];
    try {
      const slot = this.homeCluster ? this.slotOf(key) : 0;
      r = await new Promise<number[]>((resolve, reject) => this.enqueue({ key, slot, cost, force, resolve, reject }));
    } catch {
      this.stats.fallbacks++;
      return this.spec.runner.fallback(key, cost);
    }
    const [own, others, window, left, admitted] = r as [number, number, number, number, number];
    this.note(key, window, own, sentAt + left);
    const allowed = cost === 0 ? own + others <= p.limit : admitted === 1;
    return makeDecision({
      allowed,
      limit: p.limit,
      remaining: Math.max(0, p.limit - own - others),
      resetAfterMs: left,
      retryAfterMs: allowed ? 0 : Math.max(1, left),
      delayMs: 0,
      policy: p.name,
    });
  }

  /**
   * Decisions made in one turn go to Redis in one script call (up to MAX_BATCH each), as the store's own
   * table batches them: under load that is what keeps a decision's cost, and its latency, flat.
   */
  private enqueue(op: QueuedDecision): void {
    this.queue.push(op);
    if (this.queue.length >= MAX_BATCH) this.flush();
    else if (this.queue.length === 1) queueMicrotask(this.flushNow);
  }

  private readonly flushNow = () => this.flush();

  private flush(): void {
    const ops = this.queue;
    if (ops.length === 0) return;
    this.queue = [];
    // On a Cluster home, a call per hash slot (batch.ts, as the store's own tables do).
    batches(ops, this.homeCluster, MAX_BATCH, this.sendNow);
  }

  private readonly sendNow = (ops: QueuedDecision[]) => this.send(ops);

  private send(ops: QueuedDecision[]): void {
    const keys = ops.map((o) => this.spec.runner.keyFor(o.key, this.suffix));
    const args = [
      this.regions.name,
      String(this.spec.policy.windowMs),
      String(this.spec.policy.limit),
      this.spec.runner.clientClock ? String(this.spec.clock()) : '',
      String(this.regions.peers.length),
      ...this.peerArgs,
    ];
    for (const o of ops) args.push(String(o.cost), o.force ? '1' : '0');
    this.spec.runner.run('regions-decide', keys, args).then(
      (reply) => {
        const r = reply as unknown[];
        ops.forEach((o, i) => {
          o.resolve(r.slice(5 * i, 5 * i + 5).map(Number));
        });
      },
      (err: unknown) => {
        for (const o of ops) o.reject(err);
      },
    );
  }

  private note(key: string, window: number, own: number, deadline: number): void {
    if (own <= 0) return;
    let st = this.keys.get(key);
    if (st === undefined) {
      if (this.keys.size >= this.regions.maxKeys) {
        const oldest = this.keys.keys().next().value as string;
        this.keys.delete(oldest);
        this.stats.dropped++;
      }
      st = { window, own, deadline, sent: this.regions.peers.map(() => 0), acked: this.regions.peers.map(() => 0) };
      this.keys.set(key, st);
    } else if (window > st.window) {
      st.window = window;
      st.own = own;
      st.deadline = deadline;
      st.sent.fill(0);
      st.acked.fill(0);
    } else if (window === st.window && own > st.own) {
      st.own = own;
    } else {
      return;
    }
    for (const d of this.dirty) d.add(key);
  }

  private updatePeerArgs(): void {
    this.peerArgs = this.regions.peers.flatMap((peer, i) => [peer.name, this.cut[i] ? String(this.floors[i]) : '0']);
  }

  private start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.exchange(), this.regions.exchangeMs);
    unrefTimer(this.timer);
    this.exchange();
  }

  /**
   * One exchange: read who the home Redis heard from, push every count a peer has not been sent, forget
   * ended windows. Its timer calls it every exchangeMs; public for tests that drive time by hand.
   */
  exchange(): void {
    this.readHeard().catch(() => {});
    const at = performance.now();
    if (this.lastExchange >= 0) this.stats.longestGapMs = Math.max(this.stats.longestGapMs, at - this.lastExchange);
    this.lastExchange = at;
    const now = this.spec.clock();
    this.regions.peers.forEach((peer, i) => {
      // A peer whose last push failed (cut, or slower than peerTimeoutMs) gets one push (at most
      // PUSH_CHUNK counts) per peerTimeoutMs until one is answered: re-sending every count each exchange
      // to a peer that answers none cost this process CPU, and the link bytes, in proportion to the keys,
      // every exchange, on the event loop its decisions run on (test/redis/regions.test.ts, "a cut or
      // slow peer link"). The bound on pushes in flight holds per push, not per exchange: what does not
      // fit stays dirty for the next one.
      const failing = this.failing[i];
      if (failing !== undefined) {
        if (this.inFlight[i]! > 0 || now < failing) return;
        this.failing[i] = now + peer.timeoutMs;
      }
      const most = failing !== undefined ? 1 : MAX_PUSHES_IN_FLIGHT;
      const changed = this.dirty[i]!;
      while (changed.size > 0 && this.inFlight[i]! < most) {
        const batch = this.take(i, changed);
        if (batch.length > 0) void this.push(i, peer, batch);
      }
      // An empty push is the heartbeat: the peer hears from this region even when it admits nothing. A
      // push to a Cluster peer does not stamp (its keys are of other slots), so there it goes every exchange.
      if (this.peerCluster[i] ? !this.beating[i] : this.inFlight[i] === 0) void this.push(i, peer, []);
    });
    // Once a window: forget keys whose window has ended (after every peer has their count, or a window
    // later, when the peers drop that window anyway).
    if (now - this.lastSweep < this.spec.policy.windowMs) return;
    this.lastSweep = now;
    for (const [key, st] of this.keys) {
      const done = st.acked.every((a) => a >= st.own);
      if ((done && now >= st.deadline) || now >= st.deadline + this.spec.policy.windowMs) this.keys.delete(key);
    }
  }

  /** Takes up to PUSH_CHUNK keys out of `changed` whose count peer `i` has not been sent. */
  private take(i: number, changed: Set<string>): Pushed[] {
    const batch: Pushed[] = [];
    const cluster = this.peerCluster[i]!;
    for (const key of changed) {
      changed.delete(key);
      const st = this.keys.get(key);
      if (st !== undefined && st.own > st.sent[i]!) batch.push({ key, st, slot: cluster ? this.slotOf(key) : 0 });
      if (batch.length === PUSH_CHUNK) break;
    }
    return batch;
  }

  private async readHeard(): Promise<void> {
    const r = (await this.spec.runner.run(
      'regions-heard',
      [this.heardKey],
      [this.spec.runner.clientClock ? String(this.spec.clock()) : ''],
    )) as unknown[];
    const now = Number(r[0]);
    const heard = new Map<string, number>();
    for (let i = 1; i + 1 < r.length; i += 2) heard.set(String(r[i]), Number(r[i + 1]));
    this.regions.peers.forEach((peer, i) => {
      const at = heard.get(peer.name);
      this.cut[i] = at === undefined || now - at > this.regions.partitionAfterMs;
    });
    this.updatePeerArgs();
  }

  /**
   * One push of `batch` to peer `i` (an empty one is the heartbeat): one call carrying the "heard" stamp
   * and every count on a standalone peer; on a Cluster peer, a call per hash slot without the stamp, or
   * the stamp alone.
   */
  private push(i: number, peer: PeerRegion, batch: Pushed[]): Promise<void> {
    this.inFlight[i]!++;
    let pushed: Promise<void>;
    if (!this.peerCluster[i]) pushed = this.merge(i, peer, batch, true);
    else if (batch.length === 0) {
      this.beating[i] = true;
      pushed = this.merge(i, peer, batch, true).finally(() => (this.beating[i] = false));
    } else {
      const calls: Promise<void>[] = [];
      batches(batch, true, PUSH_CHUNK, (group) => calls.push(this.merge(i, peer, group, false)));
      pushed = Promise.all(calls).then(() => {});
    }
    return pushed.finally(() => this.inFlight[i]!--);
  }

  /** One regions-merge call: `stamp`, whether it stamps the peer's "heard" hash (KEYS[1]). Never rejects. */
  private merge(i: number, peer: PeerRegion, batch: Pushed[], stamp: boolean): Promise<void> {
    const p = this.spec.policy;
    const keys = stamp ? [this.heardKey] : [];
    const args = [this.regions.name, String(p.windowMs), this.spec.runner.clientClock ? String(this.spec.clock()) : ''];
    const sent: [string, KeyCount, number, number][] = [];
    for (const { key, st } of batch) {
      keys.push(this.spec.runner.keyFor(key, this.suffix));
      args.push(String(st.window), String(st.own));
      sent.push([key, st, st.window, st.own]);
      st.sent[i] = st.own;
    }
    this.stats.messages++;
    this.stats.entries += batch.length;
    // EVALSHA <sha> <numkeys> keys... args...: the request as it goes on the wire.
    this.stats.bytes +=
      1 +
      String(3 + keys.length + args.length).length +
      2 +
      respBulk('EVALSHA') +
      respBulk('0'.repeat(40)) +
      respBulk(String(keys.length)) +
      [...keys, ...args].reduce((n, s) => n + respBulk(s), 0);
    return this.runOn(peer, 'regions-merge', keys, args)
      .then(() => {
        this.failing[i] = undefined;
        for (const [, st, w, own] of sent) if (st.window === w && own > st.acked[i]!) st.acked[i] = own;
      })
      .catch(() => {
        this.stats.failedMessages++;
        this.failing[i] ??= this.spec.clock();
        // Sent again with the next exchange: whole counts, so a push that did land is harmless to repeat.
        for (const [key, st, w] of sent) {
          if (st.window !== w) continue;
          st.sent[i] = st.acked[i]!;
          this.dirty[i]!.add(key);
        }
      });
  }

  /** Stops exchanging after one last push of every count a peer has not acknowledged (for shutdown and tests). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.lastExchange = -1;
    const pushes: Promise<void>[] = [];
    this.regions.peers.forEach((peer, i) => {
      const cluster = this.peerCluster[i]!;
      const batch = [...this.keys]
        .filter(([, st]) => st.own > st.acked[i]!)
        .map(([key, st]) => ({ key, st, slot: cluster ? this.slotOf(key) : 0 }));
      for (let at = 0; at < batch.length; at += PUSH_CHUNK)
        pushes.push(this.push(i, peer, batch.slice(at, at + PUSH_CHUNK)));
    });
    await Promise.all(pushes);
  }

  /** A penalty counts as admissions of this region (pushed like them); a reward cannot be taken back. */
  adjust(key: string, delta: number): Promise<Decision> {
    if (delta < 0) {
      return Promise.reject(
        new SluiceError(
          'ERR_SLUICE_INVALID_OPTION',
          `reward() is not available with strategy 'regions': a region's count only grows (that is what lets regions merge counts without counting twice); let the window end instead`,
        ),
      );
    }
    return this.run(key, delta, true);
  }

  async release(): Promise<boolean> {
    return false;
  }

  async reset(): Promise<void> {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `reset() is not available with strategy 'regions': the other regions' counts would be merged back; let the window end instead`,
    );
  }
}
