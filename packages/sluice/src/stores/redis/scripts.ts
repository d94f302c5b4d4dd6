/**
 * The Lua scripts: a prelude, one file per algorithm (the twin of its core/ module), and the driver that
 * runs a batch. A table with one policy runs prelude + its algorithm + driver; a table with several runs
 * prelude + every algorithm + driver, the multi-policy script. Each is sent as EVAL source (EVALSHA), or
 * loaded as a function library (FCALL), whose setup then runs once instead of on every call.
 */
import { readFileSync } from 'node:fs';
import type { Policy } from '../../core/index.js';
import { defineLibrary, defineScript, type LibraryScript, type Script } from './script.js';

export type { LibraryScript, Script };

/** The algorithm code the driver dispatches on, and the files that define it (in load order). */
export function algorithmCode(p: Policy): { code: string; files: string[] } {
  switch (p.algorithm) {
    case 'fixed-window':
      return p.calendar === undefined
        ? { code: 'fixed-window', files: ['fixed-window'] }
        : { code: 'calendar', files: ['calendar'] };
    case 'leaky-bucket':
      return p.mode === 'shaper'
        ? { code: 'leaky-shaper', files: ['gcra', 'leaky-shaper'] }
        : { code: 'leaky-meter', files: ['token-bucket'] };
    default:
      return { code: p.algorithm, files: [p.algorithm] };
  }
}

const FILES = [
  'fixed-window',
  'calendar',
  'sliding-log',
  'sliding-window',
  'token-bucket',
  'gcra',
  'leaky-shaper',
  'concurrency',
];

/**
 * Where each file is, each URL written out whole: a bundler (Next.js's Turbopack, webpack) copies the file
 * a literal `new URL('./x', import.meta.url)` names and rewrites the URL, and Turbopack 16.5 compiled the
 * one template `./scripts/${file}.lua` to the first file it matched, for every file.
 */
const FILE_URLS: Readonly<Record<string, () => URL>> = {
  prelude: () => new URL('./scripts/prelude.lua', import.meta.url),
  block: () => new URL('./scripts/block.lua', import.meta.url),
  driver: () => new URL('./scripts/driver.lua', import.meta.url),
  'server-time': () => new URL('./scripts/server-time.lua', import.meta.url),
  'fixed-window': () => new URL('./scripts/fixed-window.lua', import.meta.url),
  calendar: () => new URL('./scripts/calendar.lua', import.meta.url),
  'sliding-log': () => new URL('./scripts/sliding-log.lua', import.meta.url),
  'sliding-window': () => new URL('./scripts/sliding-window.lua', import.meta.url),
  'token-bucket': () => new URL('./scripts/token-bucket.lua', import.meta.url),
  gcra: () => new URL('./scripts/gcra.lua', import.meta.url),
  'leaky-shaper': () => new URL('./scripts/leaky-shaper.lua', import.meta.url),
  concurrency: () => new URL('./scripts/concurrency.lua', import.meta.url),
  lease: () => new URL('./scripts/lease.lua', import.meta.url),
  'local-sync': () => new URL('./scripts/local-sync.lua', import.meta.url),
  'regions-decide': () => new URL('./scripts/regions-decide.lua', import.meta.url),
  'regions-merge': () => new URL('./scripts/regions-merge.lua', import.meta.url),
  'regions-heard': () => new URL('./scripts/regions-heard.lua', import.meta.url),
};
const sources = new Map<string, string>();
function read(file: string): string {
  let s = sources.get(file);
  if (s === undefined) {
    const url = FILE_URLS[file];
    if (url === undefined) throw new Error(`sluice internal: no Lua file '${file}'`);
    s = readFileSync(url(), 'utf8');
    sources.set(file, s);
  }
  return s;
}

/** One Lua file's source, for a product that builds its own script on the store's prelude and algorithms (the guard). */
export function luaSource(file: 'prelude' | 'token-bucket'): string {
  return read(file);
}

/** A strategy's script (lease, local-sync): its own file after the shared server-time helper. */
export function fileScript(name: string): Script {
  return defineScript(name, `${read('server-time')}\n${read(name)}`);
}

/**
 * One policy's Lua constants. A ban wraps a fixed-size algorithm in BLOCKING (the sliding log keeps its
 * own); `rescaled` is what a token bucket decides a per-call limit with (block.lua, token-bucket.lua).
 */
function policyFields(p: Policy, ci: number): string {
  const code = algorithmCode(p).code;
  const wrap = (alg: string) => (p.block !== undefined && p.algorithm !== 'sliding-log' ? `BLOCKING(${alg})` : alg);
  const fields = [
    `alg = ${wrap(`ALG['${code}']`)}`,
    `limit = ${p.limit}`,
    `windowMs = ${p.windowMs}`,
    `burst = ${p.burst}`,
    `delay = ${p.nodelay ? 0 : p.delay}`,
    `sub = ${p.buckets}`,
  ];
  if (code === 'token-bucket' || code === 'leaky-meter')
    fields.push(`rescaled = ${wrap(`ALG['token-bucket-rescaled']`)}`);
  if (ci > 0) fields.push(`ci = ${ci}`);
  const b = p.block;
  if (b !== undefined)
    fields.push(`block = { duration = ${b.durationMs}, factor = ${b.factor}, max = ${b.maxMs}, decay = ${b.decayMs} }`);
  if (p.countRejected) fields.push('countRejected = true');
  return fields.join(', ');
}

/**
 * Whether a table keeps its policies' states in one key: several policies of fixed-size state (all but the
 * sliding log and concurrency) without bans, the usual multi-policy table (a short and a long window).
 * A decision then reads and writes one value, not one per policy (driver.lua's COMBINED).
 */
export function combinesStates(policies: readonly Policy[]): boolean {
  return (
    policies.length > 1 &&
    policies.every(
      (p) =>
        p.algorithm !== 'sliding-log' && p.algorithm !== 'concurrency' && p.block === undefined && !p.countRejected,
    )
  );
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
    `local NCAL = ${policies.filter((p) => p.calendar !== undefined).length}`,
    `local COMBINED = ${combinesStates(policies)}`,
    'local P = {',
    // delay 0 encodes nodelay for the shaper
    ...policies.map(
      (p) => `  { ${policyFields(p, policies.filter((q) => q.calendar !== undefined).indexOf(p) + 1)} },`,
    ),
    '}',
  ].join('\n');
  const code = [read('prelude'), read('block'), ...files.map(read), constants, read('driver')].join('\n');
  return defineLibrary(policies.length === 1 ? algorithmCode(policies[0]!).code : 'multi', code);
}
