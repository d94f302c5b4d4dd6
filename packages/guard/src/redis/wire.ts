/**
 * The guard script's wire format (guard.lua), shared by the state (state.ts) and its logins (login.ts):
 * how arguments are written, how replies are read, and one operation of a batch.
 */
import { createHash } from 'node:crypto';
import { show, SluiceError } from 'sluice/kit';
import type { AccountSuccess } from './records.js';
import type { JudgedFailure, JudgedSuccess, Path } from '../state.js';

export function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisGuardState ${message}`);
}

/** One operation of a batch: its keys (one hash slot), its arguments, and what to do with its reply. */
export interface Unit {
  readonly slot: number;
  readonly keys: string[];
  readonly args: string[];
  /**
   * A login operation's session number and time (`now`), which it shares with every part of it: the
   * call sends them once, by a T operation before the first unit with a different pair, and the
   * sessions themselves at its start. Undefined for the state's fleet operations (counts, baselines).
   */
  readonly context: LoginContext | undefined;
  /** Reads its reply from r at i; returns the index after it. */
  answer(r: unknown[], i: number): number;
  fail(err: unknown): void;
}

/**
 * One read of a batch: keys of one hash slot whose values are read as bytes (MGET, no script) and
 * decoded in the app (records.ts).
 */
export interface ReadUnit {
  readonly slot: number;
  readonly keys: string[];
  /** Reads its values from `values` at i; returns the index after them. */
  answer(values: readonly (Uint8Array | null)[], i: number): number;
  fail(err: unknown): void;
}

/** A login operation's session number, time and record cap, as the script's T operation takes them. */
export interface LoginContext {
  readonly session: string;
  readonly now: string;
  /** The longest a never-succeeded account's or source's record may live, in ms; '0' for no cap (budget.ts). */
  readonly cap: string;
}

/** A failure's reply: counted (1 or 0), failures on the path, total, and the path ('f' or 'u'). */
export function readFailure(r: unknown[], i: number): [JudgedFailure, number] {
  return [
    {
      counted: Number(r[i]) === 1,
      failures: Number(r[i + 1]),
      total: Number(r[i + 2]),
      path: pathOf(String(r[i + 3])),
    },
    i + 4,
  ];
}

/** A success's reply: the path and the strangers' failures before it. */
export function readSuccess(r: unknown[], i: number): [JudgedSuccess, number] {
  return [{ path: pathOf(String(r[i])), unfamiliarFailuresBefore: Number(r[i + 1]) }, i + 2];
}

/**
 * An AC operation's arguments after its code: the SHA1 of the record as the check read it ('' for none),
 * then the success's fields, its time to live and its answer (guard.lua's AC). Numbers and tags travel
 * as text: bytes would need decoding in the script.
 */
export function successArgs(read: Uint8Array | null, done: AccountSuccess): string[] {
  const args = [
    read === null ? '' : createHash('sha1').update(read).digest('hex'),
    num(done.uf),
    num(done.ul),
    num(done.lf),
    num(done.fu),
    num(done.exp),
    done.familiar,
    String(done.ends.length),
  ];
  for (const e of done.ends) args.push(num(e));
  args.push(num(done.ttlMs), code(done.judged.path), String(done.judged.unfamiliarFailuresBefore));
  return args;
}

/** A number as the script reads it: integers exactly, with no exponent. */
export function num(n: number): string {
  return Number.isInteger(n) ? n.toFixed(0) : String(n);
}

export function code(path: Path): string {
  return path === 'familiar' ? 'f' : 'u';
}

function pathOf(code: string): Path {
  return code === 'f' ? 'familiar' : 'unfamiliar';
}

/** Tags travel comma-joined in the records, so none may be empty or hold a comma. */
export function checkTags(tags: readonly string[], what: string): void {
  for (const s of tags)
    if (typeof s !== 'string' || s === '' || s.includes(','))
      invalid(`${what} tag must be a non-empty string without ',', got ${show(s)}`);
}
