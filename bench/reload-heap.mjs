// `node bench/reload-heap.mjs [cycles=10] [rules=50000]`: what reloads leave behind in `sluice serve`
// (memory store, dashboard sampling as by default), next to its peer in the same run: the same cycles on
// another build, BEFORE_DIST=<its dist/> (main's: `git worktree add /tmp/main main && (cd /tmp/main &&
// npm run build)`). Issue #45 finding 4: each 50,000 -> 7 rule cycle left the dropped rules' tables bound.
//
// Each build gets a fresh process started on 7 rules. A cycle reloads to N rules, has every rule decide
// once (in process, so every rule's table is made), reloads back to the 7 (unchanged), and then reads the
// heap after a full GC, the store's live tables and its keys. Run `npm run build` first.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(import.meta.url);
const DIST = fileURLToPath(new URL('../packages/serve/dist/', import.meta.url));

function config(n) {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n`;
  return y;
}

async function service(dist, path, cycles, n) {
  const { startService } = await import(join(dist, 'server/serve.js'));
  const { DEFAULTS } = await import(join(dist, 'server/config/settings.js'));
  const sink = new (await import('node:stream')).Writable({ write: (_c, _e, done) => done() });
  writeFileSync(path, config(6));
  const svc = await startService(
    {
      ...DEFAULTS,
      config: path,
      port: 0,
      grpcPort: -1,
      adminPort: 0,
      watch: false,
      logLevel: 'warn',
      maxRules: 400_000,
      maxConfigBytes: 64 << 20,
    },
    { logStream: sink },
  );
  const gcHeap = async () => {
    for (let i = 0; i < 3; i++) {
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 50));
    }
    return process.memoryUsage().heapUsed / 1024 / 1024;
  };
  const store = () => svc.service.store ?? [...svc.service.rules.rules.values()].find((r) => r.limiter)?.limiter.store;
  const tables = () => {
    const t = store()?.tables;
    return t?.size ?? t?.length;
  };
  const rows = [{ cycle: 0, heapMb: await gcHeap(), tables: tables(), keys: store()?.size }];
  for (let c = 1; c <= cycles; c++) {
    writeFileSync(path, config(n));
    if (!(await svc.reload('bench'))) throw new Error('reload failed');
    for (let i = 0; i < n; i++)
      svc.service.shouldRateLimit({
        domain: 'api',
        hitsAddend: 1,
        descriptors: [{ entries: [{ key: 'tenant', value: `t${i}` }] }],
      });
    const during = tables();
    writeFileSync(path, config(6));
    if (!(await svc.reload('bench'))) throw new Error('reload failed');
    rows.push({ cycle: c, heapMb: await gcHeap(), tables: tables(), keys: store()?.size, tablesAtN: during });
  }
  await svc.close(100);
  process.send(rows);
}

async function measure(label, dist, cycles, n, dir) {
  const child = fork(HERE, ['--service', dist, join(dir, `${label}.yaml`), String(cycles), String(n)], {
    execArgv: ['--expose-gc', '--max-old-space-size=8192'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.on('message', resolve);
    child.on('exit', (code) => code !== 0 && reject(new Error(`${label} exited ${code}`)));
  });
}

async function coordinator(cycles, n) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-reload-heap-'));
  try {
    const peers = [...(process.env.BEFORE_DIST ? [['before', process.env.BEFORE_DIST]] : []), ['after', DIST]];
    const results = {};
    for (const [label, dist] of peers) {
      results[label] = await measure(label, dist, cycles, n, dir);
      console.error(label, JSON.stringify(results[label]));
    }
    const f = (x) => (x === undefined ? '–' : typeof x === 'number' && !Number.isInteger(x) ? x.toFixed(1) : String(x));
    const lines = [
      `# bench/reload-heap.mjs: ${cycles} reload cycles of ${n} -> 7 rules in sluice serve (memory store), ${new Date().toISOString()}`,
      '',
      `Each cycle: reload to ${n} rules, every rule decides once (in process), reload to the 7 (unchanged); then a full GC. Peers: ${peers.map(([l, d]) => `${l} (${d})`).join(', ')}. Host load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end.`,
      '',
      `| cycle | ${peers.map(([l]) => `heap MB, ${l} | live tables, ${l} | keys, ${l}`).join(' | ')} |`,
      `|---|${peers.map(() => '---|---|---').join('|')}|`,
    ];
    for (let c = 0; c <= cycles; c++)
      lines.push(
        `| ${c} | ${peers
          .map(([l]) => {
            const r = results[l][c];
            return `${f(r.heapMb)} | ${f(r.tables)} | ${f(r.keys)}`;
          })
          .join(' | ')} |`,
      );
    const text = lines.join('\n') + '\n';
    process.stdout.write(text);
    const out = fileURLToPath(new URL('results/', import.meta.url));
    mkdirSync(out, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    writeFileSync(join(out, `reload-heap-${stamp}.md`), text);
    writeFileSync(join(out, `reload-heap-${stamp}.json`), JSON.stringify(results, null, 1));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--service')
  await service(process.argv[3], process.argv[4], Number(process.argv[5]), Number(process.argv[6]));
else await coordinator(Number(process.argv[2] ?? 10), Number(process.argv[3] ?? 50_000));
