/**
 * What sluice needs from its host, taken from the standard globals where a platform lacks Node's: Workers
 * have no `process` and no `Buffer`, and Workers and Deno return numbers from `setInterval` (no `unref`).
 * Web Crypto's `getRandomValues` is on Node 20+, Bun, Deno and workerd alike. At import time only the
 * scheduling functions are read (see below), each guarded, so importing sluice never fails on a platform
 * that lacks one.
 */

interface NodeishProcess {
  pid?: number;
  env?: Record<string, string | undefined>;
  emitWarning?: (message: string, options: { type?: string; code?: string }) => void;
}

interface DenoGlobal {
  unrefTimer?: (id: number) => void;
}

const host = globalThis as { process?: NodeishProcess; Deno?: DenoGlobal };

/** Tells one limiter instance's lease ids from another's: the pid where there is one, and 32 random bits. */
export function instanceTag(): string {
  const pid = host.process?.pid;
  const random = Math.floor(Math.random() * 2 ** 32).toString(36);
  return typeof pid === 'number' ? `${pid.toString(36)}.${random}` : random;
}

/**
 * Lets the process exit while `timer` is pending: `unref()` on Node and Bun, `Deno.unrefTimer` on Deno.
 * Returns false where a timer cannot be unref'd (Workers, where timers end with the request anyway).
 */
export function unrefTimer(timer: unknown): boolean {
  if (typeof timer === 'object' && timer !== null && typeof (timer as { unref?: unknown }).unref === 'function') {
    (timer as { unref(): void }).unref();
    return true;
  }
  if (typeof timer === 'number' && typeof host.Deno?.unrefTimer === 'function') {
    host.Deno.unrefTimer(timer);
    return true;
  }
  return false;
}

/** `NODE_ENV`, where the platform has environment variables in `process.env`. */
export function nodeEnv(): string | undefined {
  try {
    return host.process?.env?.NODE_ENV;
  } catch {
    return undefined; // Deno without --allow-env throws on reading the environment
  }
}

/**
 * A process warning on Node (and Bun and Deno, which have `process.emitWarning`), else console.warn. Next.js's
 * edge runtime has a `process.emitWarning` that throws "A Node.js API is used", so a throw falls back too.
 */
export function emitWarning(message: string, options: { type?: string; code: string }): void {
  const emit = host.process?.emitWarning;
  if (typeof emit === 'function') {
    try {
      emit.call(host.process, message, options);
      return;
    } catch {}
  }
  console.warn(`${options.type ?? 'Warning'} [${options.code}]: ${message}`);
}

/** `n` random bytes from Web Crypto (which takes at most 65,536 bytes a call). */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let o = 0; o < n; o += 65_536) crypto.getRandomValues(out.subarray(o, Math.min(n, o + 65_536)));
  return out;
}

/** Random words drawn 256 at a time: one Web Crypto call costs about as much as filling a kilobyte (some µs on Node). */
const words = new Uint32Array(256);
let nextWord = words.length;

/** A uniform float in [0, 1) from 32 random bits. */
export function randomUnit(): number {
  if (nextWord === words.length) {
    crypto.getRandomValues(words);
    nextWord = 0;
  }
  return words[nextWord++]! / 2 ** 32;
}

const encoder = new TextEncoder();

/** UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as with Buffer.from). */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** How many UTF-8 bytes `text` is, without encoding it (a lone surrogate counts 3, as U+FFFD). */
export function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c < 0xdc00 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a pair: 2 code units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

/** Lowercase hex of `bytes`. */
export function hex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += (bytes[i]! < 16 ? '0' : '') + bytes[i]!.toString(16);
  return s;
}

/**
 * Whether two byte strings are equal, in time that depends on their length only (what node:crypto's
 * timingSafeEqual does; unequal lengths are simply unequal here rather than an error).
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * The host's scheduling, captured when sluice is imported. A test's fake timers (`jest.useFakeTimers()`
 * fakes `process.nextTick`, `setImmediate`, `setTimeout` and `performance`; Vitest fakes fewer) replace the
 * globals afterwards; the Redis store's I/O (a batch's flush, a call's deadline, the wait for a connection)
 * must still run on the real ones, or every call waits until the test times out. Where a platform lacks
 * one (Workers have no `process`), the nearest equivalent stands in; reading a missing global is guarded,
 * so importing sluice still never fails.
 */
const hostProcess = host.process as (NodeishProcess & { nextTick?: (fn: () => void) => void }) | undefined;
const scheduled = globalThis as { setImmediate?: (fn: () => void) => unknown };

/**
 * The original behind a function @sinonjs/fake-timers installed (Jest's and Vitest's fakes): it marks each
 * with `.clock` and keeps the replaced one as `clock._<name>`. So sluice imported while fakes are already
 * on (Jest's `fakeTimers: { enableGlobally: true }`) still takes the real one.
 */
function unfaked<T>(fn: T, name: string): T {
  const clock = (fn as { clock?: Record<string, unknown> } | undefined)?.clock;
  const original = clock?.[`_${name}`];
  return typeof original === typeof fn && original !== undefined ? (original as T) : fn;
}

const taken = {
  setTimeout: unfaked(globalThis.setTimeout, 'setTimeout'),
  clearTimeout: unfaked(globalThis.clearTimeout, 'clearTimeout'),
  setImmediate: unfaked(scheduled.setImmediate, 'setImmediate'),
  nextTick: unfaked(hostProcess?.nextTick, 'nextTick'),
  performance: unfaked(globalThis.performance, 'performance'),
};

/** `process.nextTick` as it was at import (a microtask where there is no `process`). */
export const realNextTick: (fn: () => void) => void =
  typeof taken.nextTick === 'function' ? taken.nextTick.bind(hostProcess) : (fn) => queueMicrotask(fn);

/**
 * `setImmediate` as it was at import (a 0 ms timeout where there is none): runs `fn` once the callbacks of
 * this turn of the event loop that are already due (the I/O callbacks of one poll) have run.
 */
export const realSetImmediate: (fn: () => void) => void =
  typeof taken.setImmediate === 'function'
    ? (fn) => void taken.setImmediate!(fn)
    : (fn) => void taken.setTimeout(fn, 0);

/** `setTimeout` and `clearTimeout` as they were at import. */
export const realSetTimeout: typeof setTimeout = ((fn: () => void, ms?: number) =>
  taken.setTimeout(fn, ms)) as typeof setTimeout;
export const realClearTimeout = (timer: ReturnType<typeof setTimeout> | undefined): void => taken.clearTimeout(timer);

/** `performance.now()` of the Performance object there was at import (fake timers swap the whole object). */
export const realPerformanceNow = (): number => taken.performance.now();
