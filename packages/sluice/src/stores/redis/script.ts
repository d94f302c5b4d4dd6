/**
 * A Lua script as the connection layer sends it: EVAL source and its SHA1 for EVALSHA, and, for a script
 * that also loads as a function library (Redis 7.0 and later), the library and its function's name for
 * FUNCTION LOAD and FCALL. Any feature with Lua of its own defines its scripts here and runs them through
 * a RedisConnection (connection.ts).
 */
import { createHash } from 'node:crypto';

export { isLibrary, type LibraryScript, type Script } from './script-shape.js';
import type { LibraryScript, Script } from './script-shape.js';

/**
 * The function's flags. `allow-cross-slot-keys`: on a cluster a call may carry the keys of several slots
 * of one master, declaring its first key only (table.ts); Redis 7.0 refuses a function that touches keys
 * of a slot other than its first key's ("keys that do not hash to the same slot") unless it has this flag,
 * where EVAL source (without flags) may. A standalone server never checks slots, so the flag changes
 * nothing there.
 */
const FLAGS = "{'allow-cross-slot-keys'}";

/** The library's text under the name `fn`. */
function libraryText(fn: string, code: string): string {
  return `#!lua name=${fn}\n${code}\nredis.register_function{function_name='${fn}', callback=run, flags=${FLAGS}}`;
}

const scripts = new Map<string, Script>();

/** A script sent by EVALSHA (EVAL when Redis does not have it). One Script, and one SHA, per distinct source. */
export function defineScript(name: string, source: string): Script {
  let script = scripts.get(source);
  if (script === undefined) {
    script = { name, source, sha: createHash('sha1').update(source).digest('hex') };
    scripts.set(source, script);
  }
  return script;
}

const libraries = new Map<string, LibraryScript>();

/** A script whose code ends by defining `run(KEYS, ARGV)`: called when EVAL'd, registered as a function. */
export function defineLibrary(name: string, code: string): LibraryScript {
  const source = `${code}\nreturn run(KEYS, ARGV)`;
  let script = libraries.get(source);
  if (script === undefined) {
    const { sha } = defineScript(name, source);
    // The SHA1 in base 36 (31 characters, not 40): FCALL sends the name, and Redis hashes it, on every
    // call, and a name of up to 44 bytes is stored inline with its object (one allocation, not two).
    const librarySha = createHash('sha1').update(libraryText('', code)).digest('hex');
    const fn = `sluice_${BigInt(`0x${librarySha}`).toString(36).padStart(31, '0')}`;
    script = { name, source, sha, fn, library: libraryText(fn, code) };
    libraries.set(source, script);
  }
  return script;
}
