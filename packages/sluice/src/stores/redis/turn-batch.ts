/**
 * The one turn batcher for everything that keeps state on Redis: a feature's operations of one turn of
 * the event loop, gathered and sent as few calls as the connection allows. RedisStore's tables
 * (table.ts) and the login guard's state (its script operations and its MGET reads) each keep one.
 *
 * A batch goes when the turn ends (realSetImmediate: after the turn's due callbacks, so the operations a
 * server starts in its many I/O callbacks of one poll share a call, which process.nextTick, run after
 * each callback, never lets them; a lone operation waits for no timer), and, given `eager`, on a
 * standalone Redis as soon as it is full: Redis runs it while the client builds the next. The turn's
 * operations are split into calls of at most `max` (by `weigh`: operations, or a read's keys), by hash
 * slot on a Cluster (or as `split` says), and each call goes through the RedisConnection the caller
 * gives to `send`: its deadline, in-flight bound, counters and the failure policy's `Done`.
 *
 * @example
 * const reads = new TurnBatch<Read>({
 *   cluster: connection.cluster,
 *   max: 256,
 *   weigh: (r) => r.keys.length,
 *   eager: true,
 *   send: (batch) => connection.send(MGET, batch.flatMap((r) => r.keys), [], answerReads, batch, batch.length),
 *   writeNow: () => connection.writeNow(),
 * });
 * reads.add({ slot: slotOf(id), keys: [key], ... }); // sent with the rest of this turn's reads
 */
import { realSetImmediate } from '../../runtime.js';
import { batches, bySlot } from './batch.js';

export interface TurnBatchOptions<O extends { readonly slot: number }> {
  /** Whether the connection is to a Cluster: a call's keys must then share one hash slot. */
  cluster: boolean;
  /** Most weight per call (operations, with the default `weigh`). An operation heavier than this goes alone. */
  max: number;
  /** An operation's weight toward `max`. Default 1: `max` counts operations. */
  weigh?: (op: O) => number;
  /** Sends one call carrying `batch` (its operations in the order they came), through the connection. */
  send: (batch: O[]) => void;
  /**
   * Splits a turn's operations into calls, calling `send` with each; default: in order, at most `max`
   * weight each, and one hash slot each on a Cluster. An operation is never split between calls.
   */
  split?: (ops: O[], send: (batch: O[]) => void) => void;
  /** On a standalone Redis, send a full call at once rather than at the turn's end. Default false. */
  eager?: boolean;
  /** With `eager`: writes the calls sent so far to the socket now (RedisConnection.writeNow). */
  writeNow?: () => void;
}

export class TurnBatch<O extends { readonly slot: number }> {
  private readonly cluster: boolean;
  private readonly max: number;
  private readonly weigh: ((op: O) => number) | undefined;
  private readonly sendOne: (batch: O[]) => void;
  private readonly split: (ops: O[], send: (batch: O[]) => void) => void;
  private readonly eager: boolean;
  private readonly writeNow: (() => void) | undefined;
  private queue: O[] = [];
  /** The weight of `queue`. */
  private weight = 0;
  private scheduled = false;
  private readonly flushNow = () => this.flush();

  constructor(options: TurnBatchOptions<O>) {
    if (!Number.isSafeInteger(options.max) || options.max < 1)
      throw new RangeError(`TurnBatch: 'max' must be a positive integer, got ${String(options.max)}`);
    this.cluster = options.cluster;
    this.max = options.max;
    this.weigh = options.weigh;
    this.sendOne = options.send;
    this.split = options.split ?? ((ops, send) => this.defaultSplit(ops, send));
    this.eager = options.eager === true && !options.cluster;
    this.writeNow = options.writeNow;
  }

  /** Operations waiting for the turn's end. */
  get size(): number {
    return this.queue.length;
  }

  /** Adds `op` to this turn's batch; with `eager`, sends the batch first if `op` would overfill it, and once it is full. */
  add(op: O): void {
    const w = this.weigh === undefined ? 1 : this.weigh(op);
    if (this.eager && this.weight > 0 && this.weight + w > this.max) this.sendQueued();
    this.queue.push(op);
    this.weight += w;
    if (this.eager && this.weight >= this.max) this.sendQueued();
    else if (!this.scheduled) {
      this.scheduled = true;
      realSetImmediate(this.flushNow); // the real one, taken at import: a test's fake timers must not hold the batch
    }
  }

  /** Sends what waits now, as the turn's end would. */
  flush(): void {
    this.scheduled = false;
    const ops = this.queue;
    if (ops.length === 0) return;
    this.queue = [];
    this.weight = 0;
    this.split(ops, this.sendOne);
  }

  /** The eager path: the full batch leaves now, in one call, and is written at once. */
  private sendQueued(): void {
    const ops = this.queue;
    this.queue = [];
    this.weight = 0;
    this.sendOne(ops);
    this.writeNow?.();
  }

  /**
   * The default split: batch.ts's (in order, at most `max` operations, one slot each on a Cluster), or,
   * given `weigh`, the same by weight.
   */
  private defaultSplit(ops: O[], send: (batch: O[]) => void): void {
    if (this.weigh === undefined) return batches(ops, this.cluster, this.max, send);
    for (const group of this.cluster ? bySlot(ops) : [ops]) this.chunks(group, this.weigh, send);
  }

  /** Consecutive calls of at most `max` weight; an operation heavier than `max` goes alone. */
  private chunks(ops: O[], weigh: (op: O) => number, send: (batch: O[]) => void): void {
    let from = 0;
    let weight = 0;
    for (let i = 0; i < ops.length; i++) {
      const w = weigh(ops[i]!);
      if (weight > 0 && weight + w > this.max) {
        send(ops.slice(from, i));
        from = i;
        weight = 0;
      }
      weight += w;
    }
    send(from === 0 ? ops : ops.slice(from));
  }
}
