// `node --conditions=sluice-source --import tsx bench/reload-flood.mjs [rounds=3] [reloads=10] [rules=10000] [maxKeys=5000] [floodSeconds=10]`:
// a key flood over HTTP /json on `sluice serve` (memory store, --max-keys 5000) after 10 reloads that each
// change 10,000 limits, next to the same flood on a fresh process, in the same run. Issue #45 finding 4:
// after such reloads a flood ran at 376 req/s with p99 366 ms (max 1.96 s) against 2,139 req/s and p99
// 37 ms fresh, as eviction filtered and sorted every table ever bound.
//
// Each peer is a fresh service process (this tree's source, every setting at its default but the ports,
// --max-keys and logging). 'reloaded' starts on the 10,000 rules at a limit of 100 a minute and reloads
// 10 times, each time to a new limit for every rule (all 10,000 changed), every rule deciding once after
// each reload (in process, so every rule's table is made). 'fresh' starts on the last of those configs,
// every rule deciding once, and is not reloaded. Then this process floods POST /json with new `user`
// keys (a rule of 1,000,000 an hour) over 8 keep-alive connections for floodSeconds, after a 1 s
// warm-up, and reads each answer's wait; the service tells the CPU time it spent meanwhile (the figure
// the host's load moves least). Rounds alternate the peers' order; medians of the rounds.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './lib/stats.mjs';

const HERE = fileURLToPath(import.meta.url);
const SERVE = fileURLToPath(new URL('../packages/serve/src/server/serve.ts', import.meta.url));
const SETTINGS = fileURLToPath(new URL('../packages/serve/src/server/config/settings.ts', import.meta.url));
const CONNECTIONS = 8;

function config(rules, limit) {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
  for (let i = 0; i < rules; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
  return y;
}

/**
 * The service process: started on limits of `100 + first`, reloaded `reloads` times (each a new limit),
 * every rule deciding after each; then serves, and tells its CPU time between 'start' and 'stop'.
 */
async function service(path, first, reloads, rules, maxKeys) {
  const { startService } = await import(SERVE);
  const { DEFAULTS } = await import(SETTINGS);
  const sink = new (await import('node:stream')).Writable({ write: (_c, _e, done) => done() });
  writeFileSync(path, config(rules, 100 + first));
  const svc = await startService(
    { ...DEFAULTS, config: path, port: 0, grpcPort: -1, adminPort: 0, watch: false, logLevel: 'warn', maxKeys },
    { logStream: sink },
  );
  const decideEach = () => {
    for (let i = 0; i < rules; i++)
      svc.service.shouldRateLimit({
        domain: 'api',
        hitsAddend: 1,
        descriptors: [{ entries: [{ key: 'tenant', value: `t${i}` }] }],
      });
  };
  decideEach();
  for (let c = 1; c <= reloads; c++) {
    writeFileSync(path, config(rules, 100 + first + c));
    if (!(await svc.reload('bench'))) throw new Error('reload failed');
    decideEach();
  }
  const store = svc.service.store ?? [...svc.service.rules.rules.values()].find((r) => r.limiter)?.limiter.store;
  const t = store?.tables;
  process.send({ port: svc.httpPort, tables: t?.size ?? t?.length });
  let cpu;
  process.on('message', async (m) => {
    if (m === 'start') return void (cpu = process.cpuUsage());
    const used = process.cpuUsage(cpu);
    await svc.close(100);
    process.send({ cpuSeconds: (used.user + used.system) / 1e6 }, () => process.exit(0));
  });
}

/** POST /json with a new `user` key per request over CONNECTIONS keep-alive connections; waits in ms. */
async function flood(port, seconds, prefix, child) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let n = 0;
  const waits = [];
  const statuses = new Map();
  const one = () =>
    new Promise((resolve) => {
      const body = `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"${prefix}${n++}"}]}]}`;
      const t0 = performance.now();
      const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/json', agent }, (res) => {
        res.resume();
        res.on('end', () => {
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          resolve(performance.now() - t0);
        });
      });
      req.on('error', () => resolve(undefined));
      req.end(body);
    });
  const run = async (ms, record) => {
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < end) {
          const w = await one();
          if (record && w !== undefined) waits.push(w);
        }
      }),
    );
  };
  await run(1000, false);
  child.send('start');
  const t0 = performance.now();
  await run(seconds * 1000, true);
  const elapsed = (performance.now() - t0) / 1000;
  const used = new Promise((resolve) => child.once('message', resolve));
  child.send('stop');
  const { cpuSeconds } = await used;
  agent.destroy();
  waits.sort((a, b) => a - b);
  return {
    perSecond: waits.length / elapsed,
    p50: waits[Math.floor(waits.length * 0.5)],
    p99: waits[Math.floor(waits.length * 0.99)],
    max: waits.at(-1),
    serviceCpuMicrosPerRequest: (cpuSeconds * 1e6) / waits.length,
    answers: Object.fromEntries(statuses),
  };
}

async function measure(peer, dir, reloads, rules, maxKeys, seconds, round) {
  const first = peer === 'fresh' ? reloads : 0;
  const n = peer === 'fresh' ? 0 : reloads;
  const child = fork(
    HERE,
    ['--service', join(dir, `${peer}.yaml`), String(first), String(n), String(rules), String(maxKeys)],
    {
      execArgv: ['--conditions=sluice-source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const exited = new Promise((r) => child.once('exit', r));
  const t0 = performance.now();
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${peer} exited ${code}`)));
  });
  const setupSeconds = (performance.now() - t0) / 1000;
  const r = await flood(ready.port, seconds, `${peer}-${round}-`, child);
  await exited;
  return { ...r, tables: ready.tables, setupSeconds, load: loadavg()[0] };
}

async function coordinator(rounds, reloads, rules, maxKeys, seconds) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-reload-flood-'));
  const results = { fresh: [], reloaded: [] };
  const loads = [loadavg()[0]];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['fresh', 'reloaded'] : ['reloaded', 'fresh'];
      for (const peer of order) {
        const r = await measure(peer, dir, reloads, rules, maxKeys, seconds, round);
        results[peer].push(r);
        loads.push(r.load);
        console.error(peer, JSON.stringify(r));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const f0 = (x) => x.toFixed(0);
  const f1 = (x) => x.toFixed(1);
  const lines = [
    `# bench/reload-flood.mjs: a key flood over HTTP /json at --max-keys ${maxKeys}, fresh and after ${reloads} reloads of ${rules} changed limits, ${new Date().toISOString()}`,
    '',
    `Each peer a fresh \`sluice serve\` process (this tree's source, memory store, defaults but --max-keys ${maxKeys}); the flood: new \`user\` keys over ${CONNECTIONS} keep-alive connections for ${seconds} s after a 1 s warm-up, from the bench's own process. ${rounds} rounds, the peers' order alternating; medians of the rounds, each round's figure in brackets. Host: ${(await import('node:os')).cpus().length} cores, shared with other agents' work; load average (1 min) ${loads.map(f1).join(', ')} over the run.`,
    '',
    '| process | req/s | p50 ms | p99 ms | max ms | service CPU µs per request | live tables | setup s |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const peer of ['fresh', 'reloaded']) {
    const rs = results[peer];
    const cell = (k, f) => `${f(median(rs.map((r) => r[k])))} [${rs.map((r) => f(r[k])).join(', ')}]`;
    lines.push(
      `| ${peer === 'fresh' ? 'fresh' : `after ${reloads} reloads`} | ${cell('perSecond', f0)} | ${cell('p50', f1)} | ${cell('p99', f1)} | ${cell('max', f0)} | ${cell('serviceCpuMicrosPerRequest', f0)} | ${rs[0].tables} | ${cell('setupSeconds', f0)} |`,
    );
  }
  const text = `${lines.join('\n')}\n`;
  process.stdout.write(text);
  const out = fileURLToPath(new URL('results/', import.meta.url));
  mkdirSync(out, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(out, `reload-flood-${stamp}.md`), text);
  writeFileSync(join(out, `reload-flood-${stamp}.json`), JSON.stringify(results, null, 1));
}

if (process.argv[2] === '--service')
  await service(...process.argv.slice(3, 4), ...process.argv.slice(4, 8).map(Number));
else
  await coordinator(
    Number(process.argv[2] ?? 3),
    Number(process.argv[3] ?? 10),
    Number(process.argv[4] ?? 10_000),
    Number(process.argv[5] ?? 5000),
    Number(process.argv[6] ?? 10),
  );
