/**
 * A RedisStore table: one limiter's policies on Redis. Calls made in the same turn of the event loop are
 * coalesced into batched script calls (flushed on process.nextTick, so a lone call waits for no timer):
 * one call per `maxBatch` operations on a standalone Redis, one per hash slot and `maxBatch` on a
 * cluster. Each batch runs as one script, so every operation in it is atomic; operations on one key keep
 * their order. A batch that fails, times out, or cannot be sent gets the failure policy's answers.
 */
import { combine, fromVerdict, SluiceError, Verdict } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
import type { StoreTable, TableSpec } from '../store.js';
import type { RedisAdapter } from './adapter.js';
import { Fallback, type OnError } from './failure.js';
import { escapeId, keyOf, slotOf } from './keys.js';
import { scriptFor, takesLeases, type LibraryScript } from './scripts.js';

/** Shared by every table of one store: the client, the options and the counters. */
export interface StoreContext {
  readonly adapter: RedisAdapter;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly onError: OnError;
  readonly clientClock: boolean;
  readonly maxBatch: number;
  readonly maxInFlight: number;
  readonly stats: RedisStoreStats;
  /** The timeouts of this store's script calls. */
  readonly deadlines: Deadlines;
  inFlight: number;
  /** Whether script calls go as FCALL: until the server or the user's ACL turns out not to allow it. */
  functions: boolean;
}

export interface RedisStoreStats {
  /** Script calls sent, and operations they carried. */
  calls: number;
  operations: number;
  /** Operations answered by the failure policy. */
  fallbacks: number;
  /** Calls that got no answer within timeoutMs, and calls (or client events) that failed with an error. */
  timeouts: number;
  errors: number;
  /** Calls refused without being sent: client not ready, or too many calls unanswered. */
  refused: number;
  /** NOSCRIPT or "Function not found" replies, each followed by one reload (EVAL, FUNCTION LOAD) and retry. */
  reloads: number;
}

/** A script call awaiting its answer. */
interface Call {
  readonly table: RedisTable;
  readonly ops: Op[];
  readonly deadline: number;
  settled: boolean;
}

/**
 * The timeouts of a store's script calls: one timer for all of them instead of one per call. A store's
 * timeout is one constant, so deadlines come in the order calls are sent, and a FIFO holds them. At one
 * call in flight, a timer per call (set, then cleared by the answer) cost about a sixth of the store's
 * own CPU per decision.
 */
export class Deadlines {
  private queue: Array<Call | undefined> = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly sweepNow = () => this.sweep();

  constructor(private readonly timeoutMs: number) {}

  add(table: RedisTable, ops: Op[]): Call {
    const call: Call = { table, ops, deadline: performance.now() + this.timeoutMs, settled: false };
    const q = this.queue;
    while (this.head < q.length && q[this.head]!.settled) q[this.head++] = undefined; // answered in time
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
    }
    q.push(call);
    if (this.timer === undefined) this.timer = setTimeout(this.sweepNow, this.timeoutMs);
    else this.timer.ref(); // it may have been let go by settle()
    return call;
  }

  /** Marks a call answered; with none left unanswered, the timer no longer keeps the process alive. */
  settle(call: Call, inFlight: number): void {
    call.settled = true;
    if (inFlight === 0) this.timer?.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    const now = performance.now();
    const q = this.queue;
    while (this.head < q.length) {
      const call = q[this.head]!;
      if (!call.settled) {
        if (call.deadline > now) break;
        call.settled = true;
        call.table.expire(call.ops);
      }
      q[this.head++] = undefined;
    }
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue = q.slice(this.head);
      this.head = 0;
    }
    this.timer = setTimeout(this.sweepNow, Math.max(1, Math.ceil(this.queue[this.head]!.deadline - now)));
  }
}

type Code = 'd' | 'a' | 'r' | 'x';

/** The arguments of a call that needs none: shared by every such call, and frozen, so never written. */
const NO_ARGS = Object.freeze([]) as unknown as string[];

/** Replies that say a function library is not loaded on this server (Redis 7.0 to 8). */
const FUNCTION_MISSING = /Function not found/i;
/** FUNCTION LOAD of a library whose name, and so whose code, is already there. */
const LIBRARY_EXISTS = /already exists/i;
/** A server without functions (before 7.0), or a user whose ACL does not allow FCALL or FUNCTION LOAD. */
const FUNCTIONS_REFUSED = /unknown command|NOPERM/i;

interface Op {
  code: Code;
  key: string;
  arg: number;
  lease: string;
  time: string;
  slot: number;
  keys: string[];
  resolve: (value: never) => void;
  reject: (err: unknown) => void;
}

export class RedisTable implements StoreTable {
  readonly sync = false;
  private readonly ctx: StoreContext;
  private readonly spec: TableSpec;
  private readonly policies: readonly Policy[];
  private readonly names: string[];
  private readonly leases: boolean;
  private readonly fallback: Fallback;
  /** Scratch verdicts, one per policy, reused for every decoded answer. */
  private readonly verdicts: Verdict[];
  private readonly script: LibraryScript;
  private queue: Op[] = [];
  private scheduled = false;
  private readonly flushNow = () => this.flush();
  /** A FUNCTION LOAD of this table's library under way, which every call that found it missing awaits. */
  private loading: Promise<unknown> | undefined;

  constructor(ctx: StoreContext, spec: TableSpec) {
    this.ctx = ctx;
    this.spec = spec;
    this.policies = spec.policies;
    this.names = spec.policies.map((p) => p.name);
    this.script = scriptFor(spec.policies, ctx.clientClock);
    this.leases = takesLeases(spec.policies);
    this.verdicts = spec.policies.map(() => new Verdict(0));
    this.fallback = new Fallback(ctx.onError, spec);
  }

  decide(key: string, cost: number, leaseId: string | undefined): Promise<Decision> {
    return this.enqueue<Decision>('d', key, cost, leaseId ?? '');
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

  private enqueue<T>(code: Code, key: string, arg: number, lease: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = escapeId(key);
      const names = this.names;
      const keys = names.length === 1 ? [keyOf(this.ctx.prefix, id, names[0]!)] : names.map((n) => keyOf(this.ctx.prefix, id, n));
      const slot = this.ctx.adapter.cluster ? slotOf(id) : 0;
      const time = this.ctx.clientClock ? String(this.spec.clock()) : '';
      this.queue.push({ code, key, arg, lease, time, slot, keys, resolve: resolve as (v: never) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(this.flushNow);
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const ops = this.queue;
    this.queue = [];
    const max = this.ctx.maxBatch;
    if (!this.ctx.adapter.cluster) {
      for (let i = 0; i < ops.length; i += max) this.send(ops.length <= max ? ops : ops.slice(i, i + max));
      return;
    }
    const bySlot = new Map<number, Op[]>();
    for (const op of ops) {
      const group = bySlot.get(op.slot);
      if (group === undefined) bySlot.set(op.slot, [op]);
      else group.push(op);
    }
    for (const group of bySlot.values()) for (let i = 0; i < group.length; i += max) this.send(group.slice(i, i + max));
  }

  private send(ops: Op[]): void {
    const ctx = this.ctx;
    if (!ctx.adapter.ready() || ctx.inFlight >= ctx.maxInFlight) {
      ctx.stats.refused++;
      this.fail(ops, new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', ctx.adapter.ready() ? `RedisStore: ${ctx.inFlight} script calls unanswered ('maxInFlight' ${ctx.maxInFlight}); refusing more until Redis answers` : 'RedisStore: the Redis client is not connected'));
      return;
    }
    // A call of one operation (every call at 1 in flight) sends that operation's keys as they are.
    const lone = ops.length === 1;
    const keys: string[] = lone ? ops[0]!.keys : [];
    // Decisions of cost 1 with neither lease ids nor client times send no arguments at all (driver.lua).
    let plain = !this.leases && !ctx.clientClock;
    for (const op of ops) {
      if (!lone) for (const k of op.keys) keys.push(k);
      if (plain && (op.code !== 'd' || op.arg !== 1)) plain = false;
    }
    const args: string[] = plain ? NO_ARGS : [];
    if (!plain) {
      const clientClock = ctx.clientClock;
      for (const op of ops) {
        args.push(op.code === 'd' ? String(op.arg) : op.code + op.arg);
        if (this.leases) args.push(op.lease);
        if (clientClock) args.push(op.time);
      }
    }
    ctx.stats.calls++;
    ctx.stats.operations += ops.length;
    ctx.inFlight++;
    const call = ctx.deadlines.add(this, ops);
    // Inline arrows, not named consts: the benchmark runs through tsx, whose keepNames would otherwise
    // define a `name` on each per call, a few hundred ns at one call in flight.
    this.call(keys, args).then(
      (reply) => this.settle(call, reply, undefined),
      (err: unknown) => {
        let again: Promise<unknown> | undefined;
        try {
          again = call.settled ? undefined : this.recover(err, keys, args);
        } catch (thrown) {
          err = thrown; // a client that throws instead of rejecting: no rejection may go unhandled
        }
        if (again === undefined) this.settle(call, undefined, err);
        else again.then((reply) => this.settle(call, reply, undefined), (err2: unknown) => this.settle(call, undefined, err2));
      },
    );
  }

  /** A call's answer (or its error, if err is not undefined), unless it has timed out meanwhile. */
  private settle(call: Call, reply: unknown, err: unknown): void {
    const ctx = this.ctx;
    ctx.inFlight--;
    if (call.settled) return;
    ctx.deadlines.settle(call, ctx.inFlight);
    if (err === undefined) {
      try {
        this.answer(call.ops, reply as number[] | number);
        return;
      } catch (e) {
        err = e;
      }
    }
    ctx.stats.errors++;
    this.fail(call.ops, err);
  }

  /** Called by the store's deadlines when a call got no answer within timeoutMs. */
  expire(ops: Op[]): void {
    this.ctx.stats.timeouts++;
    this.fail(ops, new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisStore: no answer within 'timeoutMs' ${this.ctx.timeoutMs}`));
  }

  /** FCALL where functions are allowed, else EVALSHA. */
  private call(keys: string[], args: string[]): Promise<unknown> {
    const { adapter } = this.ctx;
    try {
      const functions = this.ctx.functions ? adapter.functions : undefined;
      return functions !== undefined ? functions.fcall(this.script.fn, keys, args) : adapter.evalsha(this.script.sha, keys, args);
    } catch (err) {
      return Promise.reject(err); // a client that throws instead of rejecting still gets the failure policy
    }
  }

  /**
   * The one retry a failed call gets, or undefined for none. A missing script (NOSCRIPT) or function
   * ("Function not found": a restarted or new server, a failover, a flush) is reloaded, with one EVAL or
   * one FUNCTION LOAD, and the call retried once. A server or ACL that does not allow functions turns this
   * store to EVALSHA for good. No other error is retried.
   */
  private recover(err: unknown, keys: string[], args: string[]): Promise<unknown> | undefined {
    const { adapter, stats } = this.ctx;
    const message = String((err as Error)?.message ?? err);
    const functions = this.ctx.functions ? adapter.functions : undefined;
    if (functions === undefined) {
      if (!message.startsWith('NOSCRIPT')) return undefined;
      stats.reloads++;
      return adapter.eval(this.script.source, keys, args);
    }
    if (FUNCTIONS_REFUSED.test(message)) return this.withoutFunctions(keys, args);
    if (!FUNCTION_MISSING.test(message)) return undefined;
    stats.reloads++;
    this.loading ??= functions.load(this.script.library).then(
      () => (this.loading = undefined),
      (loadErr: unknown) => {
        this.loading = undefined;
        const why = String((loadErr as Error)?.message ?? loadErr);
        if (!LIBRARY_EXISTS.test(why)) throw loadErr; // loaded meanwhile by another call or process: fine
      },
    );
    return this.loading.then(
      () => functions.fcall(this.script.fn, keys, args),
      (loadErr: unknown) => {
        if (FUNCTIONS_REFUSED.test(String((loadErr as Error)?.message ?? loadErr))) return this.withoutFunctions(keys, args);
        throw loadErr;
      },
    );
  }

  private withoutFunctions(keys: string[], args: string[]): Promise<unknown> {
    this.ctx.functions = false;
    const { adapter, stats } = this.ctx;
    return adapter.evalsha(this.script.sha, keys, args).catch((err: unknown) => {
      if (!String((err as Error)?.message ?? err).startsWith('NOSCRIPT')) throw err;
      stats.reloads++;
      return adapter.eval(this.script.source, keys, args);
    });
  }

  /** Turns the script's flat integer reply (format in driver.lua) into each operation's answer. */
  private answer(ops: Op[], r: number[] | number): void {
    const np = this.policies.length;
    const verdicts = this.verdicts;
    if (typeof r === 'number') {
      // A lone allowed decision, packed into one integer (driver.lua's single()).
      const op = ops[0]!;
      if (ops.length !== 1 || np !== 1 || op.code !== 'd') throw new Error(`sluice internal: script replied one number for ${ops.length} operations`);
      unpack(r, verdicts[0]!);
      op.resolve(fromVerdict(this.policies[0]!, verdicts[0]!, undefined) as never);
      return;
    }
    let i = 0;
    for (const op of ops) {
      if (op.code === 'd' || op.code === 'a') {
        for (let j = 0; j < np; j++) i = read(r, i, verdicts[j]!);
        const leaseId = op.code === 'd' && op.arg > 0 && op.lease !== '' ? op.lease : undefined;
        op.resolve((np === 1 ? fromVerdict(this.policies[0]!, verdicts[0]!, leaseId) : combine(this.policies, verdicts, leaseId)) as never);
      } else if (op.code === 'r') {
        op.resolve((Number(r[i++]) === 1) as never);
      } else {
        i++;
        op.resolve(undefined as never);
      }
    }
    if (i !== r.length) throw new Error(`sluice internal: script replied ${r.length} numbers, read ${i}`);
  }

  /** Answers every operation of a failed batch by the failure policy. Only reset() rejects. */
  private fail(ops: Op[], err: unknown): void {
    const f = this.fallback;
    this.ctx.stats.fallbacks += ops.length;
    for (const op of ops) {
      if (op.code === 'd') op.resolve(f.decide(op.key, op.arg, op.lease === '' ? undefined : op.lease) as never);
      else if (op.code === 'a') op.resolve(f.adjust(op.key, op.arg) as never);
      else if (op.code === 'r') op.resolve(f.release(op.key, op.lease) as never);
      else {
        f.reset(op.key);
        op.reject(err instanceof SluiceError ? err : new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisStore: reset failed: ${(err as Error)?.message ?? String(err)}`));
      }
    }
  }
}

/** An allowed, undelayed verdict packed as (remaining + 1) * 2^32 + resetAfterMs (driver.lua, PACK_*). */
function unpack(packed: number, v: Verdict): void {
  const head = Math.floor(packed / 4294967296);
  v.allowed = true;
  v.remaining = head - 1;
  v.resetAfterMs = packed - head * 4294967296;
  v.retryAfterMs = 0;
  v.delayMs = 0;
}

/** Reads one policy's verdict at r[i] into v; returns the index after it. */
function read(r: number[], i: number, v: Verdict): number {
  const head = Number(r[i]);
  if (head > 0) {
    unpack(head, v);
    return i + 1;
  }
  v.retryAfterMs = 0;
  v.delayMs = 0;
  if (head < 0) {
    v.allowed = false;
    v.remaining = -head - 1;
    v.resetAfterMs = Number(r[i + 1]);
    v.retryAfterMs = Number(r[i + 2]);
    return i + 3;
  }
  v.allowed = true;
  v.remaining = Number(r[i + 1]);
  v.resetAfterMs = Number(r[i + 2]);
  v.delayMs = Number(r[i + 3]);
  return i + 4;
}
