/**
 * A RedisStore table: one limiter's policies on Redis. Calls made in the same turn of the event loop are
 * coalesced into batched script calls by the turn batcher (turn-batch.ts: flushed once the turn's due
 * callbacks have run, so the decisions a server makes in its many I/O callbacks of one poll share a call):
 * one call per `maxBatch` operations on a standalone Redis, one per hash slot and `maxBatch` on a
 * cluster (batch.ts). Each batch runs as one script through the store's connection (connection.ts), so
 * every operation in it is atomic; operations on one key keep their order. A batch that fails, times
 * out, or cannot be sent gets the failure policy's answers.
 */
import { CalendarPeriods, SluiceError, Verdict } from '../../core/index.js';
import type { Algorithm, Decision, Policy } from '../../core/index.js';
import type { StoreTable, TableSpec } from '../store.js';
import { batches, encode, oneSlot, type Code, type Op } from './batch.js';
import type { ConnectionStats, RedisConnection } from './connection.js';
import { Fallback, type OnError } from './failure.js';
import { escapeId, keyOf, slotOf } from './keys.js';
import { answer, type AnswerMemory } from './reply.js';
import { combinesStates, scriptFor, takesLeases } from './scripts.js';
import type { LibraryScript } from './script.js';
import { TurnBatch } from './turn-batch.js';

export interface RedisStoreStats extends ConnectionStats {
  /** Operations answered by the failure policy. */
  fallbacks: number;
}

/** Shared by every table of one store: the connection, the options and the counters. */
export interface StoreContext {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly onError: OnError;
  readonly clientClock: boolean;
  readonly maxBatch: number;
  readonly stats: RedisStoreStats;
}

/** Redis's refusals of a script's key on a master that does not hold its slot (or not stably, during a move). */
const NOT_HERE = /non local key|MOVED|ASK|TRYAGAIN|CROSSSLOT|same slot/i;

export class RedisTable implements StoreTable {
  readonly sync = false;
  private readonly ctx: StoreContext;
  private readonly spec: TableSpec;
  private readonly policies: readonly Policy[];
  /** The key names after the identity: one per policy, or one for a table that combines its states. */
  private readonly names: string[];
  private readonly leases: boolean;
  private readonly fallback: Fallback;
  /** The fallback, when it remembers Redis's answers (insurance). */
  private readonly memory: AnswerMemory | undefined;
  /** Scratch verdicts, one per policy, reused for every decoded answer. */
  private readonly verdicts: Verdict[];
  private readonly script: LibraryScript;
  /** The calendar windows' periods, whose bounds every operation carries (calendar.lua). */
  private readonly calendars: CalendarPeriods[];
  /**
   * On a cluster, whether a call may carry keys of several slots of one master: for every algorithm but
   * concurrency the script reads every key of the call before it writes any (driver.lua), so a key that
   * is not on that master (the client's map was stale) fails the call before it changed anything.
   */
  private readonly byNode: boolean;
  private readonly nodeOf: (slot: number) => string | undefined;
  /** This turn's operations, sent at its end. */
  private readonly batch: TurnBatch<Op>;
  private readonly sendNow = (ops: Op[]) => this.send(ops);
  /** The connection's callback for every call of this table: `ops` is the batch the call carried. */
  private readonly done = (ops: Op[], reply: unknown, failed: boolean, err: unknown) =>
    this.settle(ops, reply, failed, err);

  constructor(ctx: StoreContext, spec: TableSpec) {
    this.ctx = ctx;
    this.spec = spec;
    this.policies = spec.policies;
    this.names = combinesStates(spec.policies)
      ? [spec.policies.map((p) => p.name).join('+')]
      : spec.policies.map((p) => p.name);
    this.script = scriptFor(spec.policies, ctx.clientClock);
    this.leases = takesLeases(spec.policies);
    this.verdicts = spec.policies.map(() => new Verdict(0));
    this.calendars = spec.policies.filter((p) => p.calendar !== undefined).map((p) => new CalendarPeriods(p.calendar!));
    this.fallback = new Fallback(ctx.onError, spec);
    this.memory = this.fallback.last === undefined ? undefined : this.fallback;
    this.byNode = ctx.connection.cluster && spec.policies.every((p) => p.algorithm !== 'concurrency');
    this.nodeOf = (slot) => ctx.connection.nodeOf(slot);
    const byNode = this.byNode ? this.nodeOf : undefined;
    this.batch = new TurnBatch<Op>({
      cluster: ctx.connection.cluster,
      max: ctx.maxBatch,
      send: this.sendNow,
      split: (ops, send) => batches(ops, ctx.connection.cluster, ctx.maxBatch, send, byNode),
    });
  }

  decide(key: string, cost: number, leaseId: string | undefined): Promise<Decision> {
    return this.enqueue<Decision>('d', key, cost, leaseId ?? '');
  }

  /** decide() with per-call limits: the script builds (and keeps) the policies they name (driver.lua's variants()). */
  decideWith(
    key: string,
    cost: number,
    leaseId: string | undefined,
    algorithms: readonly Algorithm[],
  ): Promise<Decision> {
    const policies = algorithms.map((a) => a.policy);
    let limits = '';
    for (let i = 0; i < policies.length; i++) {
      const p = policies[i]!;
      if (i > 0) limits += ',';
      if (p !== this.policies[i]) limits += `${p.limit}:${p.burst}`;
    }
    return this.enqueue<Decision>('o', key, cost, leaseId ?? '', policies, limits);
  }

  adjust(key: string, delta: number): Promise<Decision> {
    return this.enqueue<Decision>('a', key, delta, '');
  }

  release(key: string, leaseId: string): Promise<boolean> {
    return this.enqueue<boolean>('r', key, 0, leaseId);
  }

  reset(key: string): Promise<void> {
    return this.enqueue<void>('x', key, 0, '');
  }

  private enqueue<T>(
    code: Code,
    key: string,
    arg: number,
    lease: string,
    policies?: readonly Policy[],
    limits = '',
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = escapeId(key);
      const names = this.names;
      const keys =
        names.length === 1 ? [keyOf(this.ctx.prefix, id, names[0]!)] : names.map((n) => keyOf(this.ctx.prefix, id, n));
      const slot = this.ctx.connection.cluster ? slotOf(id) : 0;
      const time = this.ctx.clientClock ? String(this.spec.clock()) : '';
      const bounds =
        this.calendars.length === 0 ? '' : this.bounds(this.ctx.clientClock ? Number(time) : this.spec.clock());
      this.batch.add({
        code,
        key,
        arg,
        lease,
        time,
        slot,
        keys,
        policies,
        limits,
        bounds,
        resolve: resolve as (v: never) => void,
        reject,
      });
    });
  }

  /**
   * The bounds of each calendar window's period around `t` and of its neighbours, from this process's
   * Intl: the script counts in whichever of the three holds Redis's now, so app and Redis clocks may
   * differ by up to a period (docs/redis.md, "Calendar windows").
   */
  private bounds(t: number): string {
    let out = '';
    for (const c of this.calendars) out += (out === '' ? '' : ';') + c.boundsAround(t).join(',');
    return out;
  }

  /** Whether a batch goes as a call across slots of one master (batch.ts's encode). */
  private crossSlot(ops: Op[]): boolean {
    return this.byNode && ops.length > 1 && !oneSlot(ops);
  }

  private send(ops: Op[]): void {
    const ctx = this.ctx;
    const { keys, args } = encode(ops, this.leases, ctx.clientClock, this.calendars.length > 0, this.crossSlot(ops));
    ctx.connection.send(this.script, keys, args, this.done, ops, ops.length);
  }

  /** A call's answer, or its failure (error, timeout, refusal). */
  private settle(ops: Op[], reply: unknown, failed: boolean, err: unknown): void {
    if (failed && NOT_HERE.test(String((err as Error)?.message ?? err)) && this.crossSlot(ops)) {
      // A call across slots found a key its master does not hold (a slot moved since the client's map):
      // the script read every key before writing any, so nothing was applied. Again by slot, each call
      // then routed (and redirected) by the client on its own.
      batches(ops, true, this.ctx.maxBatch, this.sendNow);
      return;
    }
    if (!failed) {
      try {
        answer(ops, reply as number[] | number, this.policies, this.verdicts, this.memory);
        return;
      } catch (e) {
        err = e;
        this.ctx.stats.errors++;
        this.ctx.connection.health.failed(err); // a reply that does not decode: the answers are the failure policy's
      }
    }
    this.fail(ops, err);
  }

  /** Answers every operation of a failed batch by the failure policy. Only reset() rejects. */
  private fail(ops: Op[], err: unknown): void {
    const f = this.fallback;
    this.ctx.stats.fallbacks += ops.length;
    for (const op of ops) {
      if (op.code === 'd') op.resolve(f.decide(op.key, op.arg, op.lease === '' ? undefined : op.lease) as never);
      else if (op.code === 'o')
        op.resolve(f.decideWith(op.key, op.arg, op.lease === '' ? undefined : op.lease, op.policies!) as never);
      else if (op.code === 'a') op.resolve(f.adjust(op.key, op.arg) as never);
      else if (op.code === 'r') op.resolve(f.release(op.key, op.lease) as never);
      else {
        f.reset(op.key);
        op.reject(
          err instanceof SluiceError
            ? err
            : new SluiceError(
                'ERR_SLUICE_STORE_UNAVAILABLE',
                `RedisStore: reset failed: ${(err as Error)?.message ?? String(err)}`,
              ),
        );
      }
    }
  }
}
