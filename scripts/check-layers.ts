// The layers of the workspace as code: which part of which package may import which, and no import cycles
// between files. `npm test` runs it (test/layers.test.ts); `npx tsx scripts/check-layers.ts` prints what
// breaks a rule. docs/architecture.md draws the same table. Tests (*.test.ts) are not checked: a test may
// drive its module through the public facade above it.
//
// The limiter (packages/sluice) is layered inside; the products (@sluice/guard, @sluice/pow,
// @sluice/outbound, @sluice/serve) reach it through `sluice/kit` only, by package name: a relative import
// that leaves a package's src/ is refused here, as the package's build (rootDir: src) refuses it.
//
// dependency-cruiser would do this, but its current release needs Node 22+ (sluice supports 20) and reads
// TypeScript through the compiler's JavaScript API, which TypeScript 7 no longer ships; so this reads the
// import specifiers itself: every `from '...'`, `import '...'` and `import('...')` outside comments and
// template literals.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The parts of the packages, lowest first, as paths under packages/ without the `src/` ('sluice/core/' is
 * packages/sluice/src/core/). A part may import its own files and those of the parts it `uses`, nothing
 * else: so core, the bottom, imports nothing of sluice, and parts on one tier never import each other. A
 * path ending in '/' is a folder; otherwise a file.
 */
export interface Layer {
  readonly name: string;
  readonly paths: readonly string[];
  readonly uses: readonly string[];
}

/** An import that breaks a rule, let through while its cause is being fixed. */
export interface LayerException {
  readonly from: string;
  readonly to: string;
  readonly cause: string;
}

const LIMITER = ['core', 'crypto', 'runtime', 'clock', 'stores', 'distributed', 'limiter'];

export const LAYERS: readonly Layer[] = [
  // The limiter, package `sluice`. Tier 0: no sluice imports at all.
  { name: 'core', paths: ['sluice/core/'], uses: [] }, // policies, algorithms, decisions, errors, IP addresses, MaybePromise
  { name: 'crypto', paths: ['sluice/crypto/'], uses: [] }, // SHA-256, SipHash, base64url
  { name: 'runtime', paths: ['sluice/runtime.ts'], uses: [] }, // what sluice needs from its host (Node, Bun, Deno, Workers)
  { name: 'support', paths: ['sluice/support/'], uses: [] }, // seeded PRNG
  // Tier 1.
  { name: 'clock', paths: ['sluice/clock.ts'], uses: ['core', 'runtime'] },
  // Tier 2: the store contract, memory and Redis.
  { name: 'stores', paths: ['sluice/stores/'], uses: ['core', 'crypto', 'runtime', 'clock'] },
  // Tier 3: deny cache, local-sync, leases, regions, over a store.
  { name: 'distributed', paths: ['sluice/distributed/'], uses: ['core', 'crypto', 'runtime', 'clock', 'stores'] },
  // Tier 4: the facade users call.
  {
    name: 'limiter',
    paths: ['sluice/limiter.ts', 'sluice/telemetry.ts', 'sluice/index.ts'],
    uses: ['core', 'crypto', 'runtime', 'clock', 'stores', 'distributed'],
  },
  // Tier 5: the HTTP engine, other libraries' store interfaces, the Durable Object store; and the kit, the
  // one entry the products may import.
  ...['http', 'compat', 'cloudflare'].map((name) => ({ name, paths: [`sluice/${name}/`], uses: LIMITER })),
  { name: 'kit', paths: ['sluice/kit/'], uses: [...LIMITER, 'support'] },
  // Tier 6: the middlewares. sluice/nestjs serves the throttler storage beside its guard.
  { name: 'middleware', paths: ['sluice/middleware/'], uses: [...LIMITER, 'http', 'compat'] },
  // The products, each its own package, over the kit; none imports another but the service, which runs
  // the guard in its attack simulator.
  { name: 'guard', paths: ['guard/'], uses: ['kit'] },
  { name: 'pow', paths: ['pow/'], uses: ['kit'] },
  { name: 'outbound', paths: ['outbound/'], uses: ['kit'] },
  // @sluice/serve: the service, the simulators, the dashboard's demo, and the command line over them. The
  // codecs (Envoy's request and answer, protobuf, JSON, nginx's headers) import nothing of the service, so
  // the service's types and bounds are theirs to define; listed first, as the first layer a file is in wins.
  { name: 'codecs', paths: ['serve/server/codecs/'], uses: [] },
  { name: 'server', paths: ['serve/server/', 'serve/support/'], uses: ['kit', 'codecs'] },
  { name: 'simulate', paths: ['serve/simulate/'], uses: ['kit', 'guard', 'server'] },
  { name: 'demo', paths: ['serve/demo/'], uses: ['kit', 'server'] },
  { name: 'cli', paths: ['serve/cli/'], uses: ['kit', 'server', 'simulate', 'demo'] },
];

/** The packages by name, and the layer an import of each of their entries lands in. */
const PACKAGE_ENTRIES: Readonly<Record<string, string>> = {
  'sluice/kit': 'sluice/kit/index.ts',
  '@sluice/guard': 'guard/index.ts',
};

/**
 * Imports that break a rule and are known, each with its cause, `from -> to` as paths under src/. An
 * entry that no longer matches an import fails the check, so it is removed once the fix has landed.
 */
export const EXCEPTIONS: readonly LayerException[] = [];

const IDENT = /[A-Za-z0-9_$]/;
/** After these tokens a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
  '=>',
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'yield',
  'await',
]);

/** The code's tokens, comments and template literals left out: identifiers, punctuation, and strings as { str }. */
export type Token = string | { readonly str: string | undefined };

export function tokens(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const last = (): Token | undefined => out[out.length - 1];
  while (i < text.length) {
    const c = text[i]!;
    if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      let s = '';
      while (j < text.length && text[j] !== c && text[j] !== '\n') {
        if (text[j] === '\\') j++;
        s += text[j++];
      }
      out.push({ str: s });
      i = j + 1;
    } else if (c === '`') {
      i = skipTemplate(text, i + 1);
      out.push({ str: undefined });
    } else if (
      c === '/' &&
      (last() === undefined || (typeof last() === 'string' && BEFORE_REGEX.has(last() as string)))
    ) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n' && (inClass || text[j] !== '/')) {
        if (text[j] === '\\') j++;
        else if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j++;
      }
      i = j + 1;
      while (i < text.length && IDENT.test(text[i]!)) i++;
      out.push({ str: undefined });
    } else if (IDENT.test(c)) {
      let j = i;
      while (j < text.length && IDENT.test(text[j]!)) j++;
      out.push(text.slice(i, j));
      i = j;
    } else if (c === '=' && text[i + 1] === '>') {
      out.push('=>');
      i += 2;
    } else {
      if (!/\s/.test(c)) out.push(c);
      i++;
    }
  }
  return out;
}

/** The index after a template literal's closing backquote, `${...}` expressions (and templates in them) skipped. */
function skipTemplate(text: string, i: number): number {
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '`') return i + 1;
    else if (text[i] === '$' && text[i + 1] === '{') {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '`') i = skipTemplate(text, i + 1);
        else {
          if (text[i] === '{') depth++;
          else if (text[i] === '}') depth--;
          i++;
        }
      }
    } else i++;
  }
  return i;
}

/** The module specifiers a file imports, each with whether only types come through it. */
export function importsOf(text: string): { spec: string; typeOnly: boolean }[] {
  const t = tokens(text);
  const found: { spec: string; typeOnly: boolean }[] = [];
  const str = (k: number): string | undefined => {
    const tok = t[k];
    return typeof tok === 'object' ? tok.str : undefined;
  };
  let start = -1;
  for (let k = 0; k < t.length; k++) {
    const tok = t[k];
    if ((tok === 'import' || tok === 'export') && t[k - 1] !== '.') {
      start = k;
      const dynamic = tok === 'import' && t[k + 1] === '(' && t[k + 3] === ')' ? str(k + 2) : undefined;
      const bare = tok === 'import' ? str(k + 1) : undefined;
      if (dynamic !== undefined) found.push({ spec: dynamic, typeOnly: false });
      else if (bare !== undefined) found.push({ spec: bare, typeOnly: false });
    } else if (tok === 'from' && t[k - 1] !== '.' && str(k + 1) !== undefined && start >= 0) {
      found.push({ spec: str(k + 1)!, typeOnly: typeOnly(t.slice(start, k)) });
      start = -1;
    }
  }
  return found;
}

/** Whether an `import ... from` or `export ... from` clause brings in types only. */
function typeOnly(clause: Token[]): boolean {
  if (clause[1] === 'type' && clause[2] !== ',' && clause[2] !== 'from') return true;
  const open = clause.indexOf('{');
  if (open < 0 || open !== 1) return false; // a default or namespace import is a value
  const names: Token[][] = [];
  let cur: Token[] = [];
  for (const tok of clause.slice(open + 1)) {
    if (tok === ',' || tok === '}') {
      if (cur.length > 0) names.push(cur);
      cur = [];
    } else cur.push(tok);
  }
  return names.length > 0 && names.every((n) => n[0] === 'type' && n.length > 1);
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (name === 'browser' && dir.endsWith(`pow${sep}src`)) continue; // bundled for the page on its own: build-browser.mjs
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mts|mjs|js)$/.test(name) && !/\.test\.[mc]?[tj]s$/.test(name) && !name.endsWith('.d.ts'))
      out.push(path);
  }
  return out;
}

/** The file a relative specifier names ('./x.js' is ./x.ts in the sources), or undefined. */
function resolveSpec(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

export function layerOf(path: string, layers: readonly Layer[] = LAYERS): Layer | undefined {
  const rel = path.split(sep).join('/');
  return layers.find((l) => l.paths.some((p) => (p.endsWith('/') ? rel.startsWith(p) : rel === p)));
}

/** `packages/<name>/src/<path>` as the layers name it, `<name>/<path>`; undefined outside a package's src/. */
function packagePath(packagesDir: string, file: string): string | undefined {
  const [pkg, src, ...rest] = relative(packagesDir, file).split(sep);
  return src === 'src' && rest.length > 0 && !pkg!.startsWith('.') ? [pkg, ...rest].join('/') : undefined;
}

/**
 * Checks the sources of every package under `packagesDir` (each one's src/): every file in a part, every
 * import allowed, no cycle. Returns the problems as lines (empty when all holds); `exceptions` are imports
 * to let through, each still needed.
 */
export function checkLayers(
  packagesDir: string,
  {
    layers = LAYERS,
    exceptions = EXCEPTIONS,
  }: { layers?: readonly Layer[]; exceptions?: readonly LayerException[] } = {},
): string[] {
  const problems: string[] = [];
  const files = readdirSync(packagesDir)
    .filter((p) => p !== 'testing' && existsSync(join(packagesDir, p, 'src')))
    .sort()
    .flatMap((p) => sourceFiles(join(packagesDir, p, 'src')));
  const graph: Graph = new Map();
  const used = new Set<LayerException>();
  for (const file of files) {
    const rel = packagePath(packagesDir, file)!;
    const pkg = rel.split('/')[0]!;
    const layer = layerOf(rel, layers);
    if (layer === undefined) problems.push(`${rel}: in no layer; add its folder to LAYERS in scripts/check-layers.ts`);
    const edges: { to: string; typeOnly: boolean }[] = [];
    for (const { spec, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
      let to: string | undefined;
      if (spec.startsWith('.')) {
        const target = resolveSpec(file, spec);
        if (target === undefined) {
          problems.push(`${rel}: imports '${spec}', which is no file`);
          continue;
        }
        to = packagePath(packagesDir, target);
        if (to === undefined || to.split('/')[0] !== pkg) {
          problems.push(
            `${rel}: imports '${spec}', outside its package's src/ (a product reaches the limiter through sluice/kit)`,
          );
          continue;
        }
      } else if (/^(sluice|@sluice\/[^/]+)(\/|$)/.test(spec)) {
        to = PACKAGE_ENTRIES[spec];
        if (to === undefined || pkg === 'sluice') {
          problems.push(
            `${rel}: imports '${spec}'; ${pkg === 'sluice' ? 'the limiter imports its own files by path' : 'a product reaches the limiter through sluice/kit only'}`,
          );
          continue;
        }
      } else continue; // another package or a node: builtin
      edges.push({ to, typeOnly });
      const toLayer = layerOf(to, layers);
      if (layer === undefined || toLayer === undefined || toLayer === layer || layer.uses.includes(toLayer.name))
        continue;
      const known = exceptions.find((e) => e.from === rel && e.to === to);
      if (known !== undefined) used.add(known);
      else
        problems.push(
          `${rel} -> ${to}: ${layer.name} may not import ${toLayer.name} (it may import ${layer.uses.join(', ') || 'nothing of sluice'})`,
        );
    }
    graph.set(rel, edges);
  }
  for (const cycle of cycles(graph)) {
    const known = exceptions.find((e) => cycle.includes(e.from) && cycle.includes(e.to));
    if (known !== undefined) used.add(known);
    else problems.push(`import cycle: ${[...cycle, cycle[0]].join(' -> ')}`);
  }
  for (const e of exceptions)
    if (!used.has(e)) problems.push(`exception ${e.from} -> ${e.to} (${e.cause}) is no longer needed: remove it`);
  return problems;
}

/** The cycles of the import graph (Tarjan's strongly connected components of more than one file, or a self-import). */
type Graph = Map<string, { to: string; typeOnly: boolean }[]>;

function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(v, Math.min(low.get(v)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(v, Math.min(low.get(v)!, index.get(to)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).some((e) => e.to === v)) found.push(orderCycle(scc.reverse(), graph));
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** One loop through a strongly connected component, for the message: a -> b -> ... -> a. */
function orderCycle(scc: string[], graph: Graph): string[] {
  const members = new Set(scc);
  const path = [scc[0]!];
  const seen = new Set(path);
  for (;;) {
    const nextFile = (graph.get(path[path.length - 1]!) ?? [])
      .map((e) => e.to)
      .find((t) => members.has(t) && (!seen.has(t) || t === path[0]));
    if (nextFile === undefined || nextFile === path[0]) return path;
    path.push(nextFile);
    seen.add(nextFile);
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkLayers(resolve(dirname(fileURLToPath(import.meta.url)), '..', 'packages'));
  for (const p of problems) console.error(p);
  console.log(
    problems.length === 0 ? 'layers: every import points down, no cycles' : `layers: ${problems.length} problem(s)`,
  );
  process.exit(problems.length === 0 ? 0 : 1);
}
