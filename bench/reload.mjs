// `node bench/reload.mjs [reps=3] [sizes=10000,50000,300000]`: what a config reload of N rules costs
// `sluice serve` (memory store, the built dist/), next to its peer in the same run. MODES (comma-separated)
// picks the peers: 'off-thread' (this tree's dist/: a worker reads and validates, this thread places the
// tree in 2 ms slices, then swaps), 'before' (the same reload from another build, BEFORE_DIST=<its dist/>,
// e.g. main's: `git worktree add /tmp/main main && (cd /tmp/main && npm run build)`), and 'sync' (main's
// reload before issue #37: read, validate and build on the decision thread). Default: 'before,off-thread'
// when BEFORE_DIST is set, else 'sync,off-thread'.
//
// Each measurement is a fresh service process (started on 10 rules, then reloaded to N) with a client
// process sending POST /json one at a time over keep-alive throughout. Reported per mode and size, median
// of the reps: the reload's wall time, the longest wait of a decision sent during it (from the client), the
// same less what the client itself lost in it (its run-queue wait, Linux's schedstat, and its GC pauses),
// the longest event-loop delay in the service (monitorEventLoopDelay), its longest GC pause of each kind,
// the service's peak RSS (maxRSS), its RSS at idle after the reload and a full GC, and its heap then per
// rule. Each run's JSON line (stderr) names the five longest waits with what was in each: the service's GC
// pauses, its decision thread's run-queue wait, the client's. SERVICE_FLAGS adds node flags to the
// service (`--trace-gc`); SKIP_DEFAULTS=1 leaves out the run at the default bounds. 300,000 rules (about 23 MB of YAML) are over the default
// --max-config-bytes and --max-rules: the off-thread run raises both to measure them, and one more run says
// what the defaults answer. Run `npm run build` first.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, PerformanceObserver, constants as perf } from 'node:perf_hooks';

const HERE = fileURLToPath(import.meta.url);
const DIST = fileURLToPath(new URL('../packages/serve/dist/', import.meta.url));
/** The build a mode runs: 'before' runs BEFORE_DIST, the others this tree's dist/. */
const distOf = (mode) => (mode === 'before' ? process.env.BEFORE_DIST : DIST);
const MODES = (process.env.MODES ?? (process.env.BEFORE_DIST ? 'before,off-thread' : 'sync,off-thread')).split(',');
/** The dashboard samples every rule each second, as `sluice serve` does by default; DASHBOARD=0 leaves it out. */
const DASHBOARD = process.env.DASHBOARD !== '0';
const now = () => performance.timeOrigin + performance.now();

/**
 * How long this thread has waited for a CPU while runnable, in ms (Linux's /proc/thread-self/schedstat;
 * NaN elsewhere): set beside a long wait, it tells the host's share (other processes, the config worker)
 * from the thread's own work.
 */
function runQueueMs() {
  try {
    // One descriptor per thread, read again from the start each time into a small buffer: readFileSync of
    // a /proc file allocates 64 KB each call, which at 1,000 reads a second is GC pressure of its own.
    runQueue.fd ??= openSync('/proc/thread-self/schedstat', 'r');
    const n = readSync(runQueue.fd, runQueue.buf, 0, runQueue.buf.length, 0);
    return Number(runQueue.buf.toString('latin1', 0, n).split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}
const runQueue = { fd: undefined, buf: Buffer.alloc(128) };

/** Of samples [epoch ms, runQueueMs] taken in order, how much the run-queue wait grew over [from, to]. */
function runQueueOver(samples, from, to) {
  let before;
  let after;
  for (const s of samples) {
    if (s[0] <= from) before = s;
    else if (s[0] >= to) {
      after = s;
      break;
    }
  }
  return before === undefined || after === undefined ? NaN : after[1] - before[1];
}

function config(n) {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n`;
  return y;
}

/** The service process: sluice serve from dist/, reloaded on command in `mode`. */
async function service(mode, path) {
  const dist = distOf(mode);
  const { startService } = await import(join(dist, 'server/serve.js'));
  const { DEFAULTS } = await import(join(dist, 'server/config/settings.js'));
  const { loadConfig } = await import(join(dist, 'server/config/config.js'));
  const { RuleSet } = await import(join(dist, 'server/config/rules.js'));
  const raised =
    mode !== 'sync'
      ? { maxRules: 400_000, maxConfigBytes: 64 * 1024 * 1024 }
      : { maxRules: Number.MAX_SAFE_INTEGER, maxConfigBytes: Number.MAX_SAFE_INTEGER };
  const settings = {
    ...DEFAULTS,
    config: path,
    port: 0,
    grpcPort: -1,
    adminPort: 0,
    watch: false,
    logLevel: 'warn',
    ...(mode === 'defaults' ? {} : raised),
  };
  const sink = new (await import('node:stream')).Writable({ write: (_c, _e, done) => done() });
  // The dashboard samples every rule's counters each second (the service's default); DASHBOARD=0 leaves it
  // out, to time the reload alone.
  const svc = await startService(settings, { logStream: sink, ...(DASHBOARD ? {} : { sampleMs: 2_147_483_647 }) });
  process.send({ port: svc.httpPort });
  // The same measure over the second before the reload: what the shared host alone costs.
  const quiet = monitorEventLoopDelay({ resolution: 1 });
  quiet.enable();
  process.on('message', async (m) => {
    if (m !== 'reload') return;
    quiet.disable();
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    // Every GC pause from here to the report: [start (epoch ms), ms, kind], to set beside the client's waits.
    const gcs = [];
    const gcKinds = {
      [perf.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
      [perf.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
      [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
      [perf.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
    };
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        gcs.push([performance.timeOrigin + e.startTime, e.duration, gcKinds[e.detail?.kind] ?? String(e.detail?.kind)]);
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    // The decision thread's run-queue wait, sampled each millisecond it runs (see runQueueMs).
    const queued = [[now(), runQueueMs()]];
    const sampler = setInterval(() => queued.push([now(), runQueueMs()]), 1);
    await new Promise((r) => setTimeout(r, 20)); // the histogram's timer is running before the reload starts
    const maxRssBefore = process.resourceUsage().maxRSS;
    const startedAt = now();
    let ok;
    let problems;
    if (mode === 'sync') {
      // main's reload before #37: read, validate and build on this thread, then swap.
      try {
        const next = new RuleSet(
          loadConfig(path, { maxBytes: Number.MAX_SAFE_INTEGER, maxRules: Number.MAX_SAFE_INTEGER }),
          ruleOptionsOf(svc),
          svc.service.rules,
        );
        svc.service.replaceRules(next);
        ok = true;
      } catch (e) {
        ok = false;
        problems = e.problems ?? [String(e)];
      }
    } else {
      const lines = [];
      const log = svc.log;
      const error = log.error.bind(log);
      log.error = (o, msg) => (lines.push(o?.problems), error(o, msg));
      ok = await svc.reload('bench');
      problems = lines[0];
    }
    const endedAt = now();
    // The second after the swap counts too: the first dashboard sample and scrape of the new rules.
    await new Promise((r) => setTimeout(r, 1000));
    loop.disable();
    gcObserver.disconnect();
    clearInterval(sampler);
    const maxRss = process.resourceUsage().maxRSS;
    // The full GC below is the bench's own (for the heap figure): a decision waiting on it is not the reload's.
    const measuredUntil = now();
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 200));
    const heapMb = process.memoryUsage().heapUsed / 1024 / 1024;
    process.send({
      ok,
      problems,
      rules: svc.service.rules.rules.size,
      startedAt,
      endedAt,
      measuredUntil,
      loopMaxMs: loop.max / 1e6,
      quietLoopMaxMs: quiet.max / 1e6,
      maxRssMb: Math.max(maxRss, maxRssBefore) / 1024,
      idleRssMb: process.memoryUsage().rss / 1024 / 1024,
      heapMb,
      gcs,
      queued,
      queuedMs: queued.at(-1)[1] - queued[0][1],
    });
  });
}

/** The service's RuleSet options, as startService built them (the memory store of its rules). */
function ruleOptionsOf(svc) {
  const any = svc.service.rules.rules.values().next().value;
  return { store: any?.limiter?.store };
}

/** The client process: POST /json one at a time until told to stop; then every request's [sent at, ms]. */
async function client(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'u1' }] }] });
  // Per request: sent at, ms and this process's run-queue wait within it. Kept in a flat typed array, not
  // an array per request: a 300,000-rule reload sees 200,000 requests, and the client's own GC of its
  // record would otherwise add to the waits it measures. Its GC pauses are sent too, to tell them apart.
  let seen = new Float64Array(3 * 65_536);
  let count = 0;
  const gcs = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([performance.timeOrigin + e.startTime, e.duration]);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  let stop = false;
  process.on('message', (m) => {
    if (m === 'stop') stop = true;
  });
  process.send('ready');
  while (!stop) {
    const q0 = runQueueMs();
    const t0 = now();
    await new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/json',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body);
    }).catch(() => (stop = true)); // the service died: report what was seen
    const ms = now() - t0;
    if (3 * count === seen.length) {
      const more = new Float64Array(2 * seen.length);
      more.set(seen);
      seen = more;
    }
    seen.set([t0, ms, runQueueMs() - q0], 3 * count++);
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 10)); // the last GC entries
  gcObserver.disconnect();
  process.send({ gcs, seen: Array.from({ length: count }, (_, i) => Array.from(seen.subarray(3 * i, 3 * i + 3))) });
  agent.destroy();
}

function once(child, pred = () => true) {
  return new Promise((resolve, reject) => {
    const on = (m) => {
      if (!pred(m)) return;
      child.off('message', on);
      resolve(m);
    };
    child.on('message', on);
    child.once('exit', (code) => reject(new Error(`child exited (${code})`)));
  });
}

/** Longest a measurement may take: a reload still unanswered then is reported as such, and its service killed. */
const MEASURE_TIMEOUT_MS = 300_000;

async function measure(mode, n, dir) {
  let timer;
  const timeout = new Promise(
    (resolve) =>
      (timer = setTimeout(
        () => resolve({ mode, n, ok: false, problems: [`no answer within ${MEASURE_TIMEOUT_MS / 1000} s`] }),
        MEASURE_TIMEOUT_MS,
      )),
  );
  const procs = [];
  try {
    return await Promise.race([measureOnce(mode, n, dir, procs), timeout]);
  } finally {
    clearTimeout(timer);
    for (const p of procs) p.kill('SIGKILL');
  }
}

async function measureOnce(mode, n, dir, procs) {
  const path = join(dir, `policies-${mode}-${n}.yaml`);
  writeFileSync(path, config(10));
  const svc = fork(HERE, ['--service', mode, path], {
    // SERVICE_FLAGS: more V8 flags for the service (e.g. `--max-semi-space-size=4`, `--trace-gc`).
    execArgv: [
      '--expose-gc',
      '--max-old-space-size=8192',
      ...(process.env.SERVICE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  procs.push(svc);
  svc.on('error', () => {});
  try {
    const { port } = await once(svc, (m) => m?.port !== undefined);
    writeFileSync(path, config(n));
    const cl = fork(HERE, ['--client', String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    procs.push(cl);
    cl.on('error', () => {});
    await once(cl, (m) => m === 'ready');
    await new Promise((r) => setTimeout(r, 1000));
    svc.send('reload');
    const r = await once(svc, (m) => m?.startedAt !== undefined);
    cl.send('stop');
    const { seen, gcs: clientGcs } = await once(cl, (m) => Array.isArray(m?.seen));
    // The longest wait of a decision whose wait overlapped the reload or the second after it.
    // Each wait is cut at the bench's own full GC (measuredUntil), which a request sent just before it waits on.
    const during = seen
      .filter(([t, ms]) => t + ms >= r.startedAt && t <= r.endedAt + 1000)
      .map(([t, ms, ...rest]) => [t, Math.min(ms, r.measuredUntil - t), ...rest]);
    const waitMaxMs = during.reduce((max, [, ms]) => Math.max(max, ms), 0); // no spread: a long reload sees 100,000s
    // The same with what the client itself lost taken out (its run-queue wait and its GC pauses within
    // each wait): on a shared host the client, not the service, is often what waited.
    const gcsByStart = [...clientGcs].sort((a, b) => a[0] - b[0]);
    let g = 0;
    let serviceWaitMaxMs = 0;
    for (const [t, ms, queuedMs] of during) {
      while (g < gcsByStart.length && gcsByStart[g][0] + gcsByStart[g][1] <= t) g++;
      let gcMs = 0;
      for (let i = g; i < gcsByStart.length && gcsByStart[i][0] < t + ms; i++) gcMs += gcsByStart[i][1];
      serviceWaitMaxMs = Math.max(serviceWaitMaxMs, ms - Math.max(0, queuedMs) - gcMs);
    }
    const answered = during.filter(([t, ms]) => t + ms <= r.endedAt).length;
    // The five longest waits, each with the GC pauses inside it: what the decision waited for.
    const longest = [...during]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([t, ms, clientQueuedMs]) => {
        const inside = r.gcs.filter(([g, gms]) => g + gms > t && g < t + ms);
        return {
          // Of the wait: the service's decision thread waiting for a CPU, and the client's own.
          serviceQueuedMs: Math.round(runQueueOver(r.queued, t, t + ms)),
          clientQueuedMs: Math.round(clientQueuedMs),
          clientGcMs: Math.round(
            clientGcs.filter(([g, gms]) => g + gms > t && g < t + ms).reduce((sum, [, gms]) => sum + gms, 0),
          ),
          waitMs: Math.round(ms),
          // When it was sent, from the reload's start (ms); the reload ended at reloadMs.
          atMs: Math.round(t - r.startedAt),
          gcMs: Math.round(inside.reduce((sum, [, gms]) => sum + gms, 0)),
          gcs: inside.map(([, gms, kind]) => `${kind} ${gms.toFixed(1)}`),
        };
      });
    const pauses = (kind) => r.gcs.filter(([, , k]) => k === kind).map(([, ms]) => ms);
    const gcSummary = Object.fromEntries(
      ['scavenge', 'mark-compact', 'incremental marking'].map((k) => {
        const ms = pauses(k);
        return [
          k,
          { n: ms.length, maxMs: Math.round(Math.max(0, ...ms)), totalMs: Math.round(ms.reduce((a, b) => a + b, 0)) },
        ];
      }),
    );
    return {
      mode,
      n,
      ok: r.ok,
      problems: r.problems,
      rules: r.rules,
      reloadMs: r.endedAt - r.startedAt,
      waitMaxMs,
      serviceWaitMaxMs,
      answeredDuring: answered,
      loopMaxMs: r.loopMaxMs,
      quietLoopMaxMs: r.quietLoopMaxMs,
      maxRssMb: r.maxRssMb,
      idleRssMb: r.idleRssMb,
      heapMb: r.heapMb,
      heapPerRuleB: r.rules > 0 ? (r.heapMb * 1024 * 1024) / r.rules : NaN,
      serviceQueuedMs: r.queuedMs,
      longest,
      gcSummary,
    };
  } catch (e) {
    return { mode, n, ok: false, problems: [`the service died: ${e.message}`] };
  }
}

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)];
};
/** Median over runs of the longest GC pause of each kind, the longest kind first: `12 (scavenge), 9 (mark-compact)`. */
function gcColumn(runs) {
  const kinds = ['scavenge', 'mark-compact'].map((k) => [k, median(runs.map((r) => r.gcSummary?.[k]?.maxMs ?? NaN))]);
  return kinds
    .sort((a, b) => b[1] - a[1])
    .map(([k, ms]) => `${f0(ms)} (${k})`)
    .join(', ');
}
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '–');

async function coordinator(reps, sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-reload-'));
  const runs = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const n of sizes) {
        for (const mode of MODES) {
          // 300,000 rules take minutes and gigabytes on a shared host: once is enough.
          if (n > 50_000 && rep > 0) continue;
          const r = await measure(mode, n, dir);
          runs.push(r);
          console.error(JSON.stringify(r));
        }
      }
    }
    // What the default bounds answer at the largest size (SKIP_DEFAULTS=1 leaves it out, for quick looks).
    const defaults =
      process.env.SKIP_DEFAULTS === '1'
        ? { ok: undefined, problems: ['not run (SKIP_DEFAULTS=1)'] }
        : await measure('defaults', Math.max(...sizes), dir);
    console.error(JSON.stringify(defaults));
    const lines = [
      `# bench/reload.mjs: a config reload of N rules in sluice serve (memory store), ${new Date().toISOString()}`,
      '',
      `Reps: ${reps} (over 50,000 rules: 1); medians. Peers: ${MODES.join(', ')}${process.env.BEFORE_DIST ? ` ('before' is ${process.env.BEFORE_DIST})` : ''}. Dashboard sampling ${DASHBOARD ? 'on (each second, as by default)' : 'off (DASHBOARD=0)'}. The waits and delays are over the reload and the second after it. Host: ${(await import('node:os')).cpus().length} cores, load ${(
        await import('node:os')
      )
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end.`,
      '',
      "| rules | mode | applied | reload ms | longest decision wait ms | the same, less the client's own run-queue wait and GC | longest event-loop delay ms (the second before) | longest GC pause in the service ms (kind) | decisions answered during it | peak RSS MB | idle RSS MB after GC | heap after GC, bytes per rule |",
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const n of sizes) {
      for (const mode of MODES) {
        const rs = runs.filter((r) => r.n === n && r.mode === mode);
        const ok = rs.filter((r) => r.ok);
        lines.push(
          `| ${n} | ${mode} | ${ok.length}/${rs.length}${ok.length < rs.length ? ` (${rs.find((r) => !r.ok)?.problems?.[0]})` : ''} | ${f0(median(ok.map((r) => r.reloadMs)))} | ${f0(median(ok.map((r) => r.waitMaxMs)))} | ${f0(median(ok.map((r) => r.serviceWaitMaxMs)))} | ${f0(median(ok.map((r) => r.loopMaxMs)))} (${f0(median(ok.map((r) => r.quietLoopMaxMs)))}) | ${gcColumn(ok)} | ${f0(median(ok.map((r) => r.answeredDuring)))} | ${f0(median(ok.map((r) => r.maxRssMb)))} | ${f0(median(ok.map((r) => r.idleRssMb)))} | ${f0(median(ok.map((r) => r.heapPerRuleB)))} |`,
        );
      }
    }
    lines.push(
      '',
      `With the default bounds, ${Math.max(...sizes)} rules: applied ${defaults.ok}, ${defaults.problems?.[0] ?? ''} (answered in ${f0(defaults.reloadMs)} ms, longest decision wait ${f0(defaults.waitMaxMs)} ms).`,
    );
    const text = lines.join('\n') + '\n';
    process.stdout.write(text);
    const out = fileURLToPath(new URL('results/', import.meta.url));
    mkdirSync(out, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    writeFileSync(join(out, `reload-${stamp}.md`), text);
    writeFileSync(join(out, `reload-${stamp}.json`), JSON.stringify(runs.concat([defaults]), null, 1));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const role = process.argv[2];
if (role === '--service') await service(process.argv[3], process.argv[4]);
else if (role === '--client') await client(Number(process.argv[3]));
else await coordinator(Number(process.argv[2] ?? 3), (process.argv[3] ?? '10000,50000,300000').split(',').map(Number));
