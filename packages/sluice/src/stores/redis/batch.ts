/**
 * Batching: a table's operations of one turn of the event loop, grouped into script calls of at most
 * `maxBatch` operations, and each call's keys and arguments in the form driver.lua reads them. On a
 * cluster a call goes to one master: its operations share one hash slot, or (`nodeOf`, for tables of
 * fixed-size state) one master, whose slots the client's map names. With 100,000 keys each of a turn's
 * operations is on a slot of its own, so by slot a call carried one decision; by master it carries a
 * third of the turn's on 3 masters, and the call's cost is shared as on a standalone Redis.
 */

/** d: decide, o: decide with per-call limits, a: adjust, r: release, x: reset. */
export type Code = 'd' | 'o' | 'a' | 'r' | 'x';

import type { Policy } from '../../core/index.js';

/** One operation awaiting its script call's answer. */
export interface Op {
  code: Code;
  key: string;
  arg: number;
  lease: string;
  time: string;
  slot: number;
  keys: string[];
  /** 'o': the policies the call decides with, and their limits as driver.lua reads them. */
  policies: readonly Policy[] | undefined;
  limits: string;
  /** Calendar windows' bounds around the operation's time, as driver.lua reads them ('' without any). */
  bounds: string;
  resolve: (value: never) => void;
  reject: (err: unknown) => void;
}

/**
 * Calls `send` with each batch: in order, at most `max` operations each; on a cluster one hash slot each,
 * or, given `nodeOf`, one master each (by slot where the client's map names none). Anything with a
 * `slot` batches so (the regions strategy's decisions, src/distributed/regions/table.ts, by slot).
 */
export function batches<O extends { readonly slot: number } = Op>(
  ops: O[],
  cluster: boolean,
  max: number,
  send: (batch: O[]) => void,
  nodeOf?: (slot: number) => string | undefined,
): void {
  if (!cluster) {
    for (let i = 0; i < ops.length; i += max) send(ops.length <= max ? ops : ops.slice(i, i + max));
    return;
  }
  if (nodeOf !== undefined) return byMaster(ops, max, send, nodeOf);
  for (const group of bySlot(ops))
    for (let i = 0; i < group.length; i += max) send(group.length <= max ? group : group.slice(i, i + max));
}

/** Operations grouped by hash slot, each group in order, the groups in order of their first operation. */
export function bySlot<O extends { readonly slot: number }>(ops: O[]): O[][] {
  return [...groupBy(ops, (op) => op.slot)];
}

/** The operations grouped by `at`, each group in order, the groups in order of their first operation. */
function groupBy<O>(ops: O[], at: (op: O) => number | string): Iterable<O[]> {
  const groups = new Map<number | string, O[]>();
  for (const op of ops) {
    const where = at(op);
    const group = groups.get(where);
    if (group === undefined) groups.set(where, [op]);
    else group.push(op);
  }
  return groups.values();
}

/**
 * Batches per master, each filled with whole slots: a slot's operations (so every key's) are never split
 * between two calls across slots. Such a call may be refused and sent again by slot (table.ts), after
 * calls sent later; a key's operations in two of them could then run out of order. A slot with more
 * than `max` operations goes in calls of that slot alone, which the client redirects in order.
 */
function byMaster<O extends { readonly slot: number }>(
  ops: O[],
  max: number,
  send: (batch: O[]) => void,
  nodeOf: (slot: number) => string | undefined,
): void {
  for (const group of groupBy(ops, (op) => nodeOf(op.slot) ?? op.slot)) {
    if (group.length <= max && oneSlot(group)) {
      send(group);
      continue;
    }
    let batch: O[] = [];
    for (const slot of groupBy(group, (op) => op.slot)) {
      if (slot.length > max) {
        for (let i = 0; i < slot.length; i += max) send(slot.slice(i, i + max));
        continue;
      }
      if (batch.length + slot.length > max) {
        send(batch);
        batch = [];
      }
      for (const op of slot) batch.push(op);
    }
    if (batch.length > 0) send(batch);
  }
}

/** Whether the batch's keys are all of one hash slot. */
export function oneSlot(ops: readonly { readonly slot: number }[]): boolean {
  const slot = ops[0]!.slot;
  for (const op of ops) if (op.slot !== slot) return false;
  return true;
}

/** The arguments of a call that needs none: shared by every such call, and frozen, so never written. */
const NO_ARGS = Object.freeze([]) as unknown as string[];

/**
 * A batch's keys (each operation's, in order) and its arguments (driver.lua's format). `crossSlot`: the
 * keys are of several slots of one master, which a call may not declare (CROSSSLOT): it declares the
 * first key alone, which routes it, and the arguments start with '@<number of keys>' and the keys.
 */
export function encode(
  ops: Op[],
  leases: boolean,
  clientClock: boolean,
  calendars = false,
  crossSlot = false,
): { keys: string[]; args: string[] } {
  // A call of one operation (every call at 1 in flight) sends that operation's keys as they are.
  const lone = ops.length === 1;
  const keys: string[] = lone ? ops[0]!.keys : [];
  // Decisions of cost 1 with neither lease ids nor client times send no arguments at all (driver.lua).
  let plain = !leases && !clientClock && !calendars;
  for (const op of ops) {
    if (!lone) for (const k of op.keys) keys.push(k);
    if (plain && (op.code !== 'd' || op.arg !== 1)) plain = false;
  }
  if (crossSlot) {
    const args = [`@${keys.length}`, ...keys];
    if (!plain) pushArgs(ops, args, leases, clientClock, calendars);
    return { keys: [keys[0]!], args };
  }
  const args: string[] = plain ? NO_ARGS : [];
  if (!plain) pushArgs(ops, args, leases, clientClock, calendars);
  return { keys, args };
}

/** Appends each operation's arguments (driver.lua's format). */
function pushArgs(ops: Op[], args: string[], leases: boolean, clientClock: boolean, calendars: boolean): void {
  for (const op of ops) {
    args.push(op.code === 'd' ? String(op.arg) : op.code + op.arg);
    if (op.code === 'o') args.push(op.limits);
    if (calendars) args.push(op.bounds);
    if (leases) args.push(op.lease);
    if (clientClock) args.push(op.time);
  }
}
