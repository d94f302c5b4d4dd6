/**
 * Several policies on one key, decided together (GUIDE §2, "Several limits on one key"): every policy
 * evaluates the key's state, the request is charged to every policy only if every one admits, and a
 * denial writes nothing but the bans it starts (blockFor, block.ts). The memory store and the Durable
 * Object engine both decide this way, each on its own row layout: policy i's state is at
 * `base + offsets[i]` of a slab (slab algorithms), or object i of the row (`objects`).
 */
import type { Algorithm, Verdict } from './types.js';

/** A row's object states, by policy (undefined for an idle key). */
export interface RowObjects {
  get(i: number): unknown;
  set(i: number, state: unknown): void;
}

/** Evaluates every policy on the key's state into `verdicts`; true when every one admits. */
export function evaluateEvery(
  algorithms: readonly Algorithm[],
  offsets: readonly number[],
  verdicts: readonly Verdict[],
  slab: Float64Array,
  base: number,
  objects: RowObjects | undefined,
  now: number,
  cost: number,
): boolean {
  let allowed = true;
  for (let i = 0; i < algorithms.length; i++) {
    const a = algorithms[i]!;
    const v = verdicts[i]!;
    if (a.kind === 'slab') a.evaluate(slab, base + offsets[i]!, now, cost, v);
    else a.evaluate(objects?.get(i), now, cost, v);
    if (!v.allowed) allowed = false;
  }
  return allowed;
}

/**
 * What a decision writes: 'charge' when every policy admitted a cost, 'ban' on a denial of a cost where a
 * policy may ban (`mayBan`: one has `block`), undefined otherwise (a peek, a denial that changes nothing).
 */
export function writeOf(allowed: boolean, cost: number, mayBan: boolean): 'charge' | 'ban' | undefined {
  if (cost <= 0) return undefined;
  if (allowed) return 'charge';
  return mayBan ? 'ban' : undefined;
}

/** Writes a decision's `write` into the key's row: every policy's charge, or only the bans its verdicts start. */
export function writeEvery(
  write: 'charge' | 'ban',
  algorithms: readonly Algorithm[],
  offsets: readonly number[],
  verdicts: readonly Verdict[],
  slab: Float64Array,
  base: number,
  objects: RowObjects,
  now: number,
  cost: number,
  leaseId: string | undefined,
): void {
  for (let i = 0; i < algorithms.length; i++) {
    const a = algorithms[i]!;
    const v = verdicts[i]!;
    if (write === 'ban' && !v.bans) continue;
    if (a.kind === 'slab') {
      // By hand rather than slab.set(): a row is a few slots, and the builtin call costs more than the copy.
      const next = v.next;
      const o = base + offsets[i]!;
      for (let j = 0; j < next.length; j++) slab[o + j] = next[j]!;
    } else
      objects.set(
        i,
        write === 'charge' ? a.commit(objects.get(i), now, cost, leaseId) : a.ban!(objects.get(i), now, v),
      );
  }
}
