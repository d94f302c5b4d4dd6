#!/usr/bin/env node
// Where a server's instructions per request go, function by function: callgrind's self cost per function,
// with the JIT's code named through V8's perf map, as the difference of two counts (N1 and N2 requests) over
// N2 - N1, so start-up, warm-up and shutdown cancel as in bench/http-instructions.mjs. With two configs it
// prints both and sorts by B - A: what B adds to a request, by function.
// Usage: npm run build && node bench/cg-profile.mjs <A> [B] [N1=12000] [N2=36000] [rows=40]
// A and B are bench/http-server.mjs configs (node-bare, node-sluice, node-sluice-none, node-rlf, ...) or
// serve:<dist folder> / serve:bare for `sluice serve`'s /json as bench/serve/instructions.mjs drives it.
// Several minutes a config (two counts under callgrind; about 4 here). PORT picks the port (default 18391).
// CALLERS=<regex> adds, for each function whose name matches, who calls it and at what inclusive cost.
// HTTP_SERVER=<path from the root> runs another server script taking the same config argument.
// <config>@<checkout> runs the config from another checkout (its bench/ and dist/), for an A/B of two builds:
//   node bench/cg-profile.mjs node-sluice-monotonic@/tmp/base node-sluice-monotonic
// Why it exists: the counts say how much a change costs, not where; this is how the socket-address, the
// keyed-store and the stream-end costs were found (docs/benchmarks.md), with a tool that had been lost once.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countServer } from './lib/count-server.mjs';

const [A, B, ...rest] = process.argv.slice(2).filter((a) => !/^\d+$/.test(a));
const [N1 = 12000, N2 = 36000, ROWS = 40] = process.argv
  .slice(2)
  .filter((a) => /^\d+$/.test(a))
  .map(Number);
if (A === undefined || rest.length > 0) {
  process.stderr.write('usage: node bench/cg-profile.mjs <A> [B] [N1=12000] [N2=36000] [rows=40]\n');
  process.exit(2);
}
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PORT = Number(process.env.PORT ?? 18391);
const CALLERS = process.env.CALLERS === undefined ? undefined : new RegExp(process.env.CALLERS);

function server(spec) {
  const [config, root = ROOT] = spec.split('@');
  if (!config.startsWith('serve:')) {
    const get = (port) => [Buffer.from(`GET /ok HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)];
    return { args: [join(root, process.env.HTTP_SERVER ?? 'bench/http-server.mjs'), config], requests: get };
  }
  const what = config.slice('serve:'.length);
  const post = (port) =>
    Array.from({ length: 1000 }, (_, i) => {
      const n = i + 1;
      const body = `{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.${n % 250}.${n}"}]}]}`;
      return Buffer.from(
        `POST /json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
    });
  if (what.startsWith('bare'))
    return { args: [join(root, 'bench/serve', `${what}.mjs`), String(PORT)], requests: post };
  const serve = [
    'serve',
    '--config',
    join(root, 'bench/serve/policies.yaml'),
    '--port',
    String(PORT),
    '--grpc-port',
    String(PORT + 1),
  ];
  return {
    args: [
      join(root, what, 'cli/main.js'),
      ...serve,
      '--log-level',
      'warn',
      '--watch',
      'false',
      '--clock',
      'monotonic',
    ],
    requests: post,
  };
}

/** Self cost by function name in one callgrind profile, JIT addresses named by the process's perf map. */
function selfCosts(file) {
  const text = readFileSync(file, 'utf8');
  const pid = Number(/^pid: (\d+)$/m.exec(text)?.[1]);
  const names = new Map(); // compressed id -> name, shared by fn= and cfn=
  const byFn = new Map();
  const calls = new Map(); // 'caller\0callee' -> inclusive cost of those calls
  let fn = '';
  let callee = '';
  let skipNext = false;
  for (const line of text.split('\n')) {
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      if (skipNext) {
        skipNext = false; // the inclusive cost of the call just named, not this function's own
        const edge = `${fn}\0${callee}`;
        calls.set(edge, (calls.get(edge) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
        continue;
      }
      const cost = Number(line.slice(line.lastIndexOf(' ') + 1));
      byFn.set(fn, (byFn.get(fn) ?? 0) + cost);
    } else if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      const name = m ? (m[2] ?? names.get(m[1])) : line.slice(line.indexOf('=') + 1);
      if (m && m[2] !== undefined) names.set(m[1], m[2]);
      if (line.startsWith('fn=')) fn = name;
      else callee = name;
    } else if (line.startsWith('calls=')) skipNext = true;
  }
  const jit = perfMap(pid);
  const nameOf = (name) => (/^0x[0-9a-f]+$/.test(name) ? jit(Number.parseInt(name, 16)) : name);
  const named = new Map();
  for (const [name, cost] of byFn) named.set(nameOf(name), (named.get(nameOf(name)) ?? 0) + cost);
  if (CALLERS !== undefined) {
    for (const [edge, cost] of calls) {
      const [from, to] = edge.split('\0').map(nameOf);
      if (CALLERS.test(to)) named.set(`  ${to}  <-  ${from}`, (named.get(`  ${to}  <-  ${from}`) ?? 0) + cost);
    }
  }
  return named;
}

/** A lookup from a code address to V8's name for it; a later entry for the same range wins (code moves). */
function perfMap(pid) {
  const path = `/tmp/perf-${pid}.map`;
  let entries = [];
  try {
    entries = readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l, order) => {
        const [start, size, ...name] = l.split(' ');
        return {
          start: Number.parseInt(start, 16),
          end: Number.parseInt(start, 16) + Number.parseInt(size, 16),
          name: name
            .join(' ')
            .replace(/^(JS|LazyCompile|Function):/, '')
            .replace(/file:\/\/\S*?\/(dist|bench)\//, '$1/'),
          order,
        };
      });
  } catch {
    // no map: every JIT address stays unnamed
  }
  rmSync(path, { force: true });
  entries.sort((a, b) => a.start - b.start || a.order - b.order);
  return (addr) => {
    let best;
    let lo = 0;
    let hi = entries.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (entries[mid].start <= addr) lo = mid + 1;
      else hi = mid - 1;
    }
    // Several entries can start at or below addr and cover it; take the newest.
    for (let i = hi; i >= 0 && i > hi - 64; i--) {
      const e = entries[i];
      if (e.start <= addr && addr < e.end && (best === undefined || e.order > best.order)) best = e;
    }
    return best?.name ?? '[unnamed JIT code]';
  };
}

async function profile(config) {
  const { args, requests } = server(config);
  const at = async (n) => {
    const file = `/tmp/cg-profile-${process.pid}-${n}.out`;
    const env = { ...process.env, PORT: String(PORT), LIFETIME_MS: '1800000', CG_OUT: file };
    await countServer({ args: ['--perf-basic-prof', ...args], port: PORT, requests, n, env });
    const costs = selfCosts(file);
    rmSync(file, { force: true });
    return costs;
  };
  const a = await at(N1);
  const b = await at(N2);
  const per = new Map();
  for (const name of new Set([...a.keys(), ...b.keys()]))
    per.set(name, ((b.get(name) ?? 0) - (a.get(name) ?? 0)) / (N2 - N1));
  return per;
}

const fmt = (x) => x.toFixed(0).padStart(7);
const pa = await profile(A);
const total = (m) => [...m].reduce((s, [name, x]) => (name.startsWith('  ') ? s : s + x), 0);
if (B === undefined) {
  process.stdout.write(`${A}: ${total(pa).toFixed(0)} instructions per request (${N1} to ${N2})\n`);
  for (const [name, x] of [...pa].sort((p, q) => q[1] - p[1]).slice(0, ROWS))
    process.stdout.write(`${fmt(x)}  ${name}\n`);
} else {
  const pb = await profile(B);
  process.stdout.write(
    `${A}: ${total(pa).toFixed(0)}, ${B}: ${total(pb).toFixed(0)} instructions per request (${N1} to ${N2}); by function, ${A} | ${B} | B - A\n`,
  );
  const rows = [...new Set([...pa.keys(), ...pb.keys()])].map((n) => [n, pa.get(n) ?? 0, pb.get(n) ?? 0]);
  rows.sort((p, q) => Math.abs(q[2] - q[1]) - Math.abs(p[2] - p[1]));
  for (const [name, x, y] of rows.slice(0, ROWS)) process.stdout.write(`${fmt(x)} ${fmt(y)} ${fmt(y - x)}  ${name}\n`);
}
