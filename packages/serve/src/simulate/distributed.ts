// `sluice simulate distributed`: N node processes share each shape's keys on a real Redis, once per
// strategy, and every decision is written down; the tally compares admissions per key and window with
// the ideal exact limiter (min(offered, limit) per key and window), and adds Redis calls per decision,
// decision latency and, for a killed node, how long until a window admits its whole limit again and (for
// leases) how long until Redis settles the dead node's lease.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatTable } from '../support/table.js';
import { shape, WINDOW_MS, type ShapeName } from './distributed-shapes.js';

export type StrategyName = 'atomic' | 'local-sync' | 'lease';
export const STRATEGY_NAMES: readonly StrategyName[] = ['atomic', 'local-sync', 'lease'];

export interface DistributedOptions {
  readonly url: string;
  readonly nodes: number;
  readonly seconds: number;
  readonly shapes: readonly ShapeName[];
  readonly strategies: readonly StrategyName[];
  /** local-sync options other than the defaults, for sweeps. */
  readonly localSync?: { threshold?: number; intervalMs?: number };
  /** lease options other than the defaults, for sweeps. */
  readonly lease?: { ttlMs?: number };
}

export interface RunResult {
  readonly shape: ShapeName;
  readonly strategy: StrategyName;
  decisions: number;
  overPct: number;
  underPct: number;
  callsPerDecision: number;
  /**
   * Redis operations sent per decision: 1 for atomic, however its calls were batched, less the decisions
   * whose call was refused before it was sent (see storeErrorPct).
   */
  operationsPerDecision: number;
  /** Decisions answered by the failure policy ('closed' here): calls refused, timed out or failed. */
  storeErrorPct: number;
  p50: number;
  p99: number;
  /**
   * node-killed: ms from the kill to the first window, from the kill's own on, whose admissions (every
   * node's, the dead one's before it died included) reach 99 % of the limit: 0 when the kill's own window
   * does, that is, when the kill stranded no budget worth 1 %.
   */
  reclaimMs: number | undefined;
  /** node-killed, lease: ms from the kill until Redis had settled the dead node's lease (lease.lua). */
  settledMs: number | undefined;
}

interface NodeReport {
  decisions: number;
  storeErrors: number;
  calls: number;
  /** Operations the node's store sent to Redis; a batched call carries several. */
  operations: number;
  sample: number[];
}

const worker = new URL(`./distributed-node.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);

export async function runOnce(o: DistributedOptions, shapeName: ShapeName, strategy: StrategyName): Promise<RunResult> {
  const s = shape(shapeName);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sim-'));
  const prefix = `sluice-sim:${process.pid}:${Date.now().toString(36)}:${shapeName}:${strategy}`;
  const ms = o.seconds * 1000;
  try {
    const files = Array.from({ length: o.nodes }, (_, i) => join(dir, `node-${i}.txt`));
    const children = files.map((out, node) =>
      fork(
        worker,
        [
          JSON.stringify({
            url: o.url,
            prefix,
            strategy,
            shape: shapeName,
            node,
            nodes: o.nodes,
            ms,
            out,
            localSync: o.localSync,
            lease: o.lease,
          }),
        ],
        { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
      ),
    );
    await Promise.all(children.map((c) => once(c, 'message')));
    const reports = children.map((c) =>
      once(c, 'message').then(
        ([m]) => m as NodeReport,
        () => undefined,
      ),
    );
    // Start on a window boundary plus a little, so every run sees the same windows.
    const startAt = (Math.floor(Date.now() / WINDOW_MS) + 1) * WINDOW_MS + 100;
    for (const c of children) c.send({ startAt });
    let killedAt: number | undefined;
    let settled: Promise<number | undefined> = Promise.resolve(undefined);
    if (s.killAt !== undefined) {
      const at = startAt + ms * s.killAt;
      while (Date.now() < at) await new Promise((r) => setTimeout(r, 1));
      children[0]!.kill('SIGKILL');
      killedAt = Date.now();
      if (strategy === 'lease') settled = leaseSettled(o.url, `${prefix}:{k0}:p:lease`, children[0]!.pid!, killedAt);
    }
    const done = (await Promise.all(reports.map((r, i) => (killedAt !== undefined && i === 0 ? undefined : r)))).filter(
      (r): r is NodeReport => r !== undefined,
    );
    await Promise.all(
      children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)),
    );
    return { ...tally(s.limit, files, done, killedAt, shapeName, strategy), settledMs: await settled };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Polls the lease hash until the killed node (its table's id starts with its pid in base 36) has no lease
 * there any more: settled at its TTL by another node's call, or dropped with the window. Ms from the kill.
 */
async function leaseSettled(url: string, key: string, pid: number, killedAt: number): Promise<number | undefined> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { lazyConnect: true });
  await client.connect();
  const field = `e:${pid.toString(36)}.`;
  try {
    while (Date.now() - killedAt < 10 * WINDOW_MS) {
      const fields = await client.hkeys(key);
      if (!fields.some((f) => f.startsWith(field))) return Date.now() - killedAt;
      await new Promise((r) => setTimeout(r, 2));
    }
    return undefined;
  } finally {
    client.disconnect();
  }
}

function tally(
  limit: number,
  files: string[],
  reports: NodeReport[],
  killedAt: number | undefined,
  shapeName: ShapeName,
  strategy: StrategyName,
): Omit<RunResult, 'settledMs'> {
  const offered = new Map<string, number>();
  const admitted = new Map<string, number>();
  const perWindow = new Map<number, number>(); // window -> admissions by every node (the dead one's included)
  files.forEach((f) => {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (line === '') continue;
      const [key, window, ok] = line.split(' ');
      const kw = `${key} ${window}`;
      offered.set(kw, (offered.get(kw) ?? 0) + 1);
      if (ok === '1') {
        admitted.set(kw, (admitted.get(kw) ?? 0) + 1);
        perWindow.set(Number(window), (perWindow.get(Number(window)) ?? 0) + 1);
      }
    }
  });
  let ideal = 0;
  let over = 0;
  let under = 0;
  let decisions = 0;
  for (const [kw, n] of offered) {
    decisions += n;
    const best = Math.min(n, limit);
    const got = admitted.get(kw) ?? 0;
    ideal += best;
    over += Math.max(0, got - best);
    under += Math.max(0, best - got);
  }
  let reclaimMs: number | undefined;
  if (killedAt !== undefined) {
    const killWindow = Math.floor(killedAt / WINDOW_MS);
    const first = [...perWindow]
      .filter(([w, n]) => w >= killWindow && n >= limit * 0.99)
      .map(([w]) => w)
      .sort((a, b) => a - b)[0];
    reclaimMs = first === undefined ? undefined : Math.max(0, first * WINDOW_MS - killedAt);
  }
  const sample = reports.flatMap((r) => r.sample).sort((a, b) => a - b);
  const at = (q: number) => sample[Math.min(sample.length - 1, Math.floor(q * sample.length))] ?? 0;
  const reportedDecisions = reports.reduce((a, r) => a + r.decisions, 0);
  const calls = reports.reduce((a, r) => a + r.calls, 0);
  const operations = reports.reduce((a, r) => a + r.operations, 0);
  const storeErrors = reports.reduce((a, r) => a + r.storeErrors, 0);
  return {
    shape: shapeName,
    strategy,
    decisions,
    overPct: ideal === 0 ? 0 : (100 * over) / ideal,
    underPct: ideal === 0 ? 0 : (100 * under) / ideal,
    callsPerDecision: reportedDecisions === 0 ? 0 : calls / reportedDecisions,
    operationsPerDecision: reportedDecisions === 0 ? 0 : operations / reportedDecisions,
    storeErrorPct: reportedDecisions === 0 ? 0 : (100 * storeErrors) / reportedDecisions,
    p50: at(0.5),
    p99: at(0.99),
    reclaimMs,
  };
}

export async function simulateDistributed(o: DistributedOptions, onRun?: (r: RunResult) => void): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (const s of o.shapes) {
    for (const strategy of o.strategies) {
      const r = await runOnce(o, s, strategy);
      onRun?.(r);
      results.push(r);
    }
  }
  return results;
}

export function formatDistributed(o: DistributedOptions, results: readonly RunResult[]): string {
  const sync = o.localSync ?? {};
  const flags = `${sync.threshold !== undefined ? ` --local-sync-threshold ${sync.threshold}` : ''}${sync.intervalMs !== undefined ? ` --local-sync-interval ${sync.intervalMs}` : ''}${o.lease?.ttlMs !== undefined ? ` --lease-ttl ${o.lease.ttlMs}` : ''}`;
  const lines = [`sluice simulate distributed --nodes ${o.nodes} --seconds ${o.seconds}${flags}`, ''];
  lines.push(
    `${o.nodes} node processes on one Redis (${o.url.replace(/\/\/[^@]*@/, '//')}); fixed window of 1 s per key; strategies at their defaults${flags ? ' but for the flags above' : ''}.`,
  );
  const columns = [
    'shape',
    'strategy',
    'decisions',
    'over-admission',
    'under-admission',
    'Redis calls/decision',
    'store errors',
    'p50 ms',
    'p99 ms',
    'full window after',
    'lease settled after',
  ].map((header, i) => ({ header, align: i < 2 ? ('left' as const) : ('right' as const) }));
  const rows = results.map((r) => [
    r.shape,
    r.strategy,
    String(r.decisions),
    `${r.overPct.toFixed(2)}%`,
    `${r.underPct.toFixed(2)}%`,
    r.callsPerDecision.toFixed(4),
    `${r.storeErrorPct.toFixed(2)}%`,
    r.p50.toFixed(3),
    r.p99.toFixed(3),
    r.shape !== 'node-killed' ? '-' : r.reclaimMs === undefined ? 'not seen' : `${r.reclaimMs.toFixed(0)} ms`,
    r.shape !== 'node-killed' || r.strategy !== 'lease'
      ? '-'
      : r.settledMs === undefined
        ? 'not seen'
        : `${r.settledMs.toFixed(0)} ms`,
  ]);
  lines.push('', ...formatTable(columns, rows), '');
  lines.push(
    'over/under-admission: admissions above/below min(offered, limit) per key and window, as a share of that ideal.',
  );
  lines.push('Redis calls/decision: script calls over decisions, on the nodes that lived to report.');
  lines.push(
    "store errors: decisions answered by the failure policy ('closed': denied) because a call was refused, timed out or failed.",
  );
  lines.push(
    "full window after: from the kill to the first window (0: its own) admitting 99% of the limit, the dead node's admissions included.",
  );
  lines.push(
    "lease settled after: from the kill until Redis had settled the dead node's lease (its TTL passed, or the window ended).",
    '',
  );
  return lines.join('\n');
}
