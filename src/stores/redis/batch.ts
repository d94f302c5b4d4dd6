/**
 * Batching by slot: a table's operations of one turn of the event loop, grouped into script calls of at
 * most `maxBatch` operations whose keys share one hash slot, and each call's keys and arguments in the
 * form driver.lua reads them.
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

/** Calls `send` with each batch: in order, at most `max` operations each, one hash slot each on a cluster. */
export function batches(ops: Op[], cluster: boolean, max: number, send: (batch: Op[]) => void): void {
  if (!cluster) {
    for (let i = 0; i < ops.length; i += max) send(ops.length <= max ? ops : ops.slice(i, i + max));
    return;
  }
  const bySlot = new Map<number, Op[]>();
  for (const op of ops) {
    const group = bySlot.get(op.slot);
    if (group === undefined) bySlot.set(op.slot, [op]);
    else group.push(op);
  }
  for (const group of bySlot.values()) for (let i = 0; i < group.length; i += max) send(group.slice(i, i + max));
}

/** The arguments of a call that needs none: shared by every such call, and frozen, so never written. */
const NO_ARGS = Object.freeze([]) as unknown as string[];

/** A batch's keys (each operation's, in order) and its arguments (driver.lua's format). */
export function encode(ops: Op[], leases: boolean, clientClock: boolean, calendars = false): { keys: string[]; args: string[] } {
  // A call of one operation (every call at 1 in flight) sends that operation's keys as they are.
  const lone = ops.length === 1;
  const keys: string[] = lone ? ops[0]!.keys : [];
  // Decisions of cost 1 with neither lease ids nor client times send no arguments at all (driver.lua).
  let plain = !leases && !clientClock && !calendars;
  for (const op of ops) {
    if (!lone) for (const k of op.keys) keys.push(k);
    if (plain && (op.code !== 'd' || op.arg !== 1)) plain = false;
  }
  const args: string[] = plain ? NO_ARGS : [];
  if (!plain) {
    for (const op of ops) {
      args.push(op.code === 'd' ? String(op.arg) : op.code + op.arg);
      if (op.code === 'o') args.push(op.limits);
      if (calendars) args.push(op.bounds);
      if (leases) args.push(op.lease);
      if (clientClock) args.push(op.time);
    }
  }
  return { keys, args };
}
