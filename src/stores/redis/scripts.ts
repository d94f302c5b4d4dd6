/**
 * The Lua scripts: a prelude, one file per algorithm (the twin of its core/ module), and the driver that
 * runs a batch. A table with one policy runs prelude + its algorithm + driver; a table with several runs
 * prelude + every algorithm + driver, the multi-policy script. Each is sent as EVAL source (EVALSHA), or
 * loaded as a function library (FCALL), whose setup then runs once instead of on every call.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Policy } from '../../core/index.js';

export interface Script {
  readonly name: string;
  /** For EVAL; its SHA1 for EVALSHA. */
  readonly source: string;
  readonly sha: string;
}

/** An algorithm script, which also loads as a Redis function library (Redis 7.0 and later). */
export interface LibraryScript extends Script {
  /**
   * The library's name and its one function's: `sluice_<sha in base 36>`, so different code never shares
   * a name.
   */
  readonly fn: string;
  /** For FUNCTION LOAD: the same code, with `run` registered as the function instead of called. */
  readonly library: string;
}

/** The algorithm code the driver dispatches on, and the files that define it (in load order). */
export function algorithmCode(p: Policy): { code: string; files: string[] } {
  switch (p.algorithm) {
    case 'leaky-bucket':
      return p.mode === 'shaper' ? { code: 'leaky-shaper', files: ['gcra', 'leaky-shaper'] } : { code: 'leaky-meter', files: ['token-bucket'] };
    default:
      return { code: p.algorithm, files: [p.algorithm] };
  }
}

const FILES = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-shaper', 'concurrency'];
const sources = new Map<string, string>();
const scripts = new Map<string, Script>();

function read(file: string): string {
  let s = sources.get(file);
  if (s === undefined) {
    s = readFileSync(new URL(`./scripts/${file}.lua`, import.meta.url), 'utf8');
    sources.set(file, s);
  }
  return s;
}

/** One Script (and one SHA) per distinct source. */
function register(name: string, source: string): Script {
  let script = scripts.get(source);
  if (script === undefined) {
    script = { name, source, sha: createHash('sha1').update(source).digest('hex') };
    scripts.set(source, script);
  }
  return script;
}

const libraries = new Map<string, LibraryScript>();

/** A script whose code ends by defining `run(KEYS, ARGV)`: called when EVAL'd, registered as a function. */
function registerLibrary(name: string, code: string): LibraryScript {
  const source = `${code}\nreturn run(KEYS, ARGV)`;
  let script = libraries.get(source);
  if (script === undefined) {
    const { sha } = register(name, source);
    // The SHA1 in base 36 (31 characters, not 40): FCALL sends the name, and Redis hashes it, on every
    // call, and a name of up to 44 bytes is stored inline with its object (one allocation, not two).
    const fn = `sluice_${BigInt(`0x${sha}`).toString(36).padStart(31, '0')}`;
    script = { name, source, sha, fn, library: `#!lua name=${fn}\n${code}\nredis.register_function('${fn}', run)` };
    libraries.set(source, script);
  }
  return script;
}

/** A strategy's script (lease, local-sync): its own file after the shared server-time helper. */
export function fileScript(name: string): Script {
  return register(name, `${read('server-time')}\n${read(name)}`);
}

/** Whether a table's operations carry lease ids: only concurrency policies take them. */
export function takesLeases(policies: readonly Policy[]): boolean {
  return policies.some((p) => p.algorithm === 'concurrency');
}

/**
 * The script for a table's policies: its algorithm's own script, or the multi-policy one, with the
 * policies written in as constants. Tables with the same policies share one script (and one SHA).
 */
export function scriptFor(policies: readonly Policy[], clientClock: boolean): LibraryScript {
  const files = policies.length === 1 ? algorithmCode(policies[0]!).files : FILES;
  const constants = [
    `local CLIENT_TIME = ${clientClock}`,
    `local LEASES = ${takesLeases(policies)}`,
    'local P = {',
    // delay 0 encodes nodelay for the shaper
    ...policies.map((p) => `  { alg = ALG['${algorithmCode(p).code}'], limit = ${p.limit}, windowMs = ${p.windowMs}, burst = ${p.burst}, delay = ${p.nodelay ? 0 : p.delay}, sub = ${p.buckets} },`),
    '}',
  ].join('\n');
  const code = [read('prelude'), ...files.map(read), constants, read('driver')].join('\n');
  return registerLibrary(policies.length === 1 ? algorithmCode(policies[0]!).code : 'multi', code);
}
