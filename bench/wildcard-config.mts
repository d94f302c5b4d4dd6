// `npx tsx bench/wildcard-config.mts <checkout A> <checkout B> [reps=3] [rules=100000]`: what issue 49's
// wildcards (finding 2) cost a config reload and a match, next to a peer in the same run. Each measurement is
// a fresh process (tsx, from the checkout's src/), alternating A and B, reps interleaved; medians reported.
//   load: loadRulesOffThread (the service's reload: the worker parses and validates, this thread places the
//         tree in slices and builds the limiters) of N rules, wall ms and this process's CPU ms (both threads).
//   match: µs per match() at a level of 1,000 wildcard descriptors whose value matches only the last one
//         (the worst scan), over 200,000 calls.
// Configs: 'plain' (the reload bench's `key: tenant, value: t<i>`), 'trailing' (`t<i>*`), 'middle'
// (`t<i>*x`, which main loads but never matches).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const KINDS = ['plain', 'trailing', 'middle'] as const;
type Kind = (typeof KINDS)[number];

function config(kind: Kind, n: number): string {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
  const value = (i: number) => (kind === 'plain' ? `t${i}` : kind === 'trailing' ? `t${i}*` : `t${i}*x`);
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: ${value(i)}\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n`;
  return y;
}

async function child(root: string, kind: Kind, n: number): Promise<void> {
  const src = (f: string) => pathToFileURL(join(root, 'src', f)).href;
  const { loadRulesOffThread } = await import(src('server/config-reload.ts'));
  const { parseConfig } = await import(src('server/config.ts'));
  const { match } = await import(src('server/rules.ts'));
  const { MemoryStore } = await import(src('stores/memory.ts'));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-wild-'));
  const path = join(dir, 'rules.yaml');
  writeFileSync(path, config(kind, n));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const set = await loadRulesOffThread(
    path,
    { maxRules: n + 10, maxConfigBytes: 256 * 1024 * 1024 },
    { store: new MemoryStore() },
    undefined,
  );
  const loadMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  rmSync(dir, { recursive: true, force: true });
  if (set.rules.size !== n + 1) throw new Error(`loaded ${set.rules.size} rules, expected ${n + 1}`);
  // match(): 1,000 wildcards at one level, the value matching only the last.
  const small = parseConfig([{ file: 'm.yaml', text: config(kind === 'plain' ? 'trailing' : kind, 1000) }]);
  const level = small.domains.get('api').root;
  const value = kind === 'middle' ? 't999-zzx' : 't999-zz';
  const entries = [{ key: 'tenant', value }];
  let hit = 0;
  const calls = 200_000;
  for (let i = 0; i < 20_000; i++) if (match(level, entries) !== undefined) hit++;
  const m0 = performance.now();
  for (let i = 0; i < calls; i++) if (match(level, entries) !== undefined) hit++;
  const matchUs = ((performance.now() - m0) * 1000) / calls;
  process.stdout.write(
    JSON.stringify({ loadMs, cpuMs: (cpu.user + cpu.system) / 1000, matchUs, matched: hit > 0 }) + '\n',
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const [a, b, repsText = '3', nText = '100000'] = process.argv.slice(2);
  if (a === '--child') return child(b!, repsText as Kind, Number(nText));
  if (a === undefined || b === undefined)
    throw new Error('usage: npx tsx bench/wildcard-config.mts <checkout A> <checkout B> [reps] [rules]');
  const reps = Number(repsText);
  const n = Number(nText);
  const runs: Record<string, { loadMs: number; cpuMs: number; matchUs: number; matched: boolean }[]> = {};
  const load0 = loadavg()[0]!;
  for (let r = 0; r < reps; r++) {
    for (const kind of KINDS) {
      for (const root of [a, b]) {
        const out = execFileSync(
          process.execPath,
          ['--import', 'tsx', new URL(import.meta.url).pathname, '--child', root, kind, String(n)],
          { cwd: root, encoding: 'utf8', maxBuffer: 1 << 20 },
        );
        (runs[`${root}|${kind}`] ??= []).push(JSON.parse(out.trim().split('\n').pop()!));
      }
    }
  }
  const lines = [
    `# wildcard config: ${n.toLocaleString('en')} rules, ${reps} reps, medians; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
    '',
    `\`npx tsx bench/wildcard-config.mts ${a} ${b} ${reps} ${n}\``,
    '',
    '| checkout | config | reload ms | reload CPU ms | match µs (1,000 wildcards, last matches) | matched |',
    '|---|---|---|---|---|---|',
  ];
  for (const kind of KINDS) {
    for (const root of [a, b]) {
      const xs = runs[`${root}|${kind}`]!;
      lines.push(
        `| ${root} | ${kind} | ${median(xs.map((x) => x.loadMs)).toFixed(0)} | ${median(xs.map((x) => x.cpuMs)).toFixed(0)} | ${median(xs.map((x) => x.matchUs)).toFixed(2)} | ${xs[0]!.matched} |`,
      );
    }
  }
  const text = lines.join('\n') + '\n';
  process.stdout.write(text);
  writeFileSync(
    new URL(`./results/wildcard-config-${new Date().toISOString().replace(/[:.]/g, '-')}.md`, import.meta.url),
    text,
  );
}

await main();
