/**
 * The Lua scripts: a prelude, one file per algorithm (the twin of its core/ module), and the driver that
 * runs a batch. A table with one policy runs prelude + its algorithm + driver; a table with several runs
 * prelude + every algorithm + driver, the multi-policy script.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Policy } from '../../core/index.js';

export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** The algorithm code the driver dispatches on, and the file that defines it. */
export function algorithmCode(p: Policy): { code: string; file: string } {
  switch (p.algorithm) {
    case 'leaky-bucket':
      return p.mode === 'shaper' ? { code: 'leaky-shaper', file: 'gcra' } : { code: 'leaky-meter', file: 'token-bucket' };
    default:
      return { code: p.algorithm, file: p.algorithm };
  }
}

const FILES = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'concurrency'];
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

/** The script for a table's policies: its algorithm's own script, or the multi-policy one. */
export function scriptFor(policies: readonly Policy[]): Script {
  const files = policies.length === 1 ? [algorithmCode(policies[0]!).file] : FILES;
  const name = policies.length === 1 ? files[0]! : 'multi';
  let script = scripts.get(name);
  if (script === undefined) {
    const source = [read('prelude'), ...files.map(read), read('driver')].join('\n');
    script = { name, source, sha: createHash('sha1').update(source).digest('hex') };
    scripts.set(name, script);
  }
  return script;
}
