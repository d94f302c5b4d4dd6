/**
 * Reply decoding: driver.lua's flat integer reply turned into each operation's answer (format in
 * driver.lua): a packed integer for an allowed, undelayed verdict, else the verdict's fields.
 */
import { combine, fromVerdict, type Verdict } from '../../core/index.js';
import type { Decision, Policy } from '../../core/index.js';
import type { Op } from './batch.js';

/** Where the answers are remembered for an outage (insurance's last answers). */
export interface AnswerMemory {
  note(key: string, d: Decision): void;
  reset(key: string): void;
}

/**
 * Resolves each operation of a batch from the script's reply; `verdicts` is scratch, one per policy.
 * Each decision is also given to `memory`, when there is one. Throws on a malformed reply.
 */
export function answer(
  ops: Op[],
  r: number[] | number,
  policies: readonly Policy[],
  verdicts: Verdict[],
  memory: AnswerMemory | undefined,
): void {
  const np = policies.length;
  if (typeof r === 'number') {
    // A lone allowed decision, packed into one integer (driver.lua's single()).
    const op = ops[0]!;
    if (ops.length !== 1 || np !== 1 || op.code !== 'd')
      throw new Error(`sluice internal: script replied one number for ${ops.length} operations`);
    unpack(r, verdicts[0]!);
    const d = fromVerdict(policies[0]!, verdicts[0]!, undefined);
    if (memory !== undefined) memory.note(op.key, d);
    op.resolve(d as never);
    return;
  }
  let i = 0;
  for (const op of ops) {
    if (op.code === 'd' || op.code === 'a' || op.code === 'o') {
      for (let j = 0; j < np; j++) i = read(r, i, verdicts[j]!);
      const leaseId = op.code !== 'a' && op.arg > 0 && op.lease !== '' ? op.lease : undefined;
      const ps = op.policies ?? policies;
      const d = np === 1 ? fromVerdict(ps[0]!, verdicts[0]!, leaseId) : combine(ps, verdicts, leaseId);
      if (memory !== undefined) memory.note(op.key, d);
      op.resolve(d as never);
    } else if (op.code === 'r') {
      op.resolve((Number(r[i++]) === 1) as never);
    } else {
      i++;
      if (memory !== undefined) memory.reset(op.key); // Redis forgot the key: so does insurance
      op.resolve(undefined as never);
    }
  }
  if (i !== r.length) throw new Error(`sluice internal: script replied ${r.length} numbers, read ${i}`);
}

/** An allowed, undelayed verdict packed as (remaining + 1) * 2^32 + resetAfterMs (driver.lua, PACK_*). */
function unpack(packed: number, v: Verdict): void {
  const head = Math.floor(packed / 4294967296);
  v.allowed = true;
  v.remaining = head - 1;
  v.resetAfterMs = packed - head * 4294967296;
  v.retryAfterMs = 0;
  v.delayMs = 0;
  v.blocked = false;
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
  v.blocked = false;
  if (head < 0) {
    v.allowed = false;
    v.remaining = -head - 1;
    v.resetAfterMs = Number(r[i + 1]);
    const retry = Number(r[i + 2]);
    // A ban's retryAfterMs comes negated (driver.lua's reply()).
    v.blocked = retry < 0;
    v.retryAfterMs = retry < 0 ? -retry : retry;
    return i + 3;
  }
  v.allowed = true;
  v.remaining = Number(r[i + 1]);
  v.resetAfterMs = Number(r[i + 2]);
  v.delayMs = Number(r[i + 3]);
  return i + 4;
}
