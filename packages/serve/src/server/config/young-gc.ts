/**
 * A young-generation collection (V8's scavenge) run on purpose, between two slices of a reload.
 *
 * Every object a reload places survives, so V8's own scavenges during one copy a full young generation
 * of them (up to 16 MB a semi-space) and stop the thread for 10-100 ms, in the middle of whatever
 * decision is running. Run after each slice instead, a scavenge copies only that slice's rules (a few
 * hundred KB, well under a millisecond on a quiet core) at a point chosen between decisions, and V8's own
 * scavenges find little left to copy. The objects are copied the same number of times either way.
 *
 * The gc() function exists only under `--expose-gc`; it is taken once from a fresh vm context with the flag
 * set for that moment (the way the `expose-gc` package does it), so `sluice serve` needs no node flag and
 * `npx sluice serve` gets it too. If that fails, collectYoung does nothing and V8 collects as it would.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'minor' }) => void;

let gc: Gc | null | undefined;

function gcFunction(): Gc | null {
  if (gc !== undefined) return gc;
  gc = null;
  try {
    const exposed = typeof globalThis.gc === 'function';
    if (!exposed) setFlagsFromString('--expose-gc');
    try {
      const f = runInNewContext('gc') as unknown;
      if (typeof f === 'function') gc = f as Gc;
    } finally {
      // Contexts made from now on get no `gc` global of their own.
      if (!exposed) setFlagsFromString('--no-expose-gc');
    }
  } catch {
    gc = null;
  }
  return gc;
}

/** Runs a scavenge now, if this runtime lets it (V8); otherwise nothing. */
export function collectYoung(): void {
  gcFunction()?.({ type: 'minor' });
}
