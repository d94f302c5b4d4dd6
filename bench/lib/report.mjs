/**
 * @file Renders one run's results as markdown: facts, throughput per impl × pattern, memory at 1M keys,
 * and the same-run ratios the issue's targets are stated in. Ratios are only meaningful within one run:
 * absolute rates on this shared VM move by 10–30 % between runs, and by more between machines.
 */
import { summarize, fmtFixed, fmtSummary } from './stats.mjs';

/** The issue's targets. Throughput ratios are decisions/s of the first impl ÷ the second, same pattern. */
export const TARGETS = [
  { a: 'sluice', b: 'rlflex', pattern: 'hot', min: 2 },
  { a: 'sluice', b: 'rlflex', pattern: 'rr100k', min: 2 },
  { a: 'sluice', b: 'rlflex', pattern: 'hot-deny', min: 5 },
  // "limitSync within 1.5× of ref" = at most 1.5× its time per decision = at least 1/1.5 of its rate.
  { a: 'sluice-sync', b: 'ref', pattern: 'hot', min: 1 / 1.5 },
  { a: 'sluice-sync', b: 'ref', pattern: 'hot-deny', min: 1 / 1.5 },
  { a: 'sluice-sync', b: 'ref', pattern: 'rr100k', min: 1 / 1.5 },
];
export const MAX_BYTES_PER_KEY = 100;

const x2 = (v) => (Number.isFinite(v) ? v.toFixed(2) + '×' : '–');
const bytes = fmtFixed(1);

export function renderMarkdown({ facts, config, runs, finishedLoadavg }) {
  const ok = runs.filter((r) => !r.error);
  const of = (impl, pattern) => ok.filter((r) => r.impl === impl && r.pattern === pattern);
  const sum = (impl, pattern, f) => {
    const rs = of(impl, pattern);
    return rs.length ? summarize(rs.map(f)) : undefined;
  };
  const cell = (s, f) => (s ? fmtSummary(s, f) : '–');
  const { impls, patterns } = config;
  const steady = patterns.filter((p) => p !== 'once1m');
  let md = `# sluice in-process benchmark — ${facts.date}\n\n`;

  md += '| fact | value |\n|---|---|\n';
  for (const [k, v] of Object.entries(facts)) md += `| ${k} | ${typeof v === 'object' ? JSON.stringify(v) : v} |\n`;
  md += `| loadavg at end | ${finishedLoadavg.join(' ')} |\n`;
  md += `| method | ${config.reps} reps interleaved, fresh \`node --expose-gc\` per measurement, warm-up ${config.warmupMs} ms, window ${config.measureMs} ms, batches of 4096 between clock reads; ALLOW policy ${config.allowPolicy} |\n\n`;

  md += `## Decisions per second, median (min – max) over ${config.reps} reps\n\n`;
  md += `once1m is the insert rate of 1,000,000 new keys (one decision each).\n\n`;
  md += `| impl | ${patterns.join(' | ')} |\n|---|${patterns.map(() => '---|').join('')}\n`;
  for (const impl of impls)
    md += `| ${impl} | ${patterns.map((p) => cell(sum(impl, p, (r) => r.opsPerSec))).join(' | ')} |\n`;

  md += `\n## ns per decision (median) · allowed fraction · GC pause ms in the window (median)\n\n`;
  md += `| impl | ${patterns.join(' | ')} |\n|---|${patterns.map(() => '---|').join('')}\n`;
  for (const impl of impls) {
    md += `| ${impl} | ${patterns
      .map((p) => {
        const ns = sum(impl, p, (r) => r.nsPerOp),
          af = sum(impl, p, (r) => r.allowedFrac),
          gc = sum(impl, p, (r) => r.gcMs);
        return ns ? `${ns.median.toFixed(1)} ns · ${(af.median * 100).toFixed(1)} % · ${gc.median.toFixed(0)}` : '–';
      })
      .join(' | ')} |\n`;
  }

  if (patterns.includes('once1m')) {
    md += `\n## Memory per key at 1,000,000 token-bucket keys (heapUsed + external, after forced GC), median (min – max)\n\n`;
    md += `| impl | bytes/key incl. key string | bytes/key excl. key string | of which external (typed arrays) | RSS bytes/key (median) |\n|---|---|---|---|---|\n`;
    for (const impl of impls) {
      const s = (f) => sum(impl, 'once1m', f);
      md += `| ${impl} | ${cell(
        s((r) => r.bytesPerKeyInclKey),
        bytes,
      )} | ${cell(
        s((r) => r.bytesPerKeyExclKey),
        bytes,
      )} | ${cell(
        s((r) => r.externalBytesPerKeyInclKey),
        bytes,
      )} | ${s((r) => r.rssBytesPerKey)?.median.toFixed(0) ?? '–'} |\n`;
    }
  }

  md += `\n## Same-run ratios (decisions/s of A ÷ B): ratio of medians, and min–max of the per-rep ratios (rep i of A ÷ rep i of B)\n\n`;
  md += `| A ÷ B | ${patterns.join(' | ')} |\n|---|${patterns.map(() => '---|').join('')}\n`;
  for (const [a, b] of [
    ['sluice', 'rlflex'],
    ['sluice-sync', 'ref'],
    ['sluice', 'ref-async'],
    ['sluice-sync', 'limiter-tb'],
  ]) {
    md += `| ${a} ÷ ${b} | ${patterns
      .map((p) => {
        const r = ratio(of(a, p), of(b, p));
        return r ? `${x2(r.ofMedians)} (${x2(r.min)} – ${x2(r.max)})` : '–';
      })
      .join(' | ')} |\n`;
  }

  md += `\n## Targets (issue)\n\n| target | measured | met? |\n|---|---|---|\n`;
  for (const t of TARGETS.filter((t) => steady.includes(t.pattern))) {
    const r = ratio(of(t.a, t.pattern), of(t.b, t.pattern));
    md += `| ${t.a} ÷ ${t.b} on ${t.pattern} ≥ ${x2(t.min)} | ${r ? `${x2(r.ofMedians)} (per rep ${x2(r.min)} – ${x2(r.max)})` : '–'} | ${r ? verdict(r.ofMedians, r.min, t.min) : 'not measured'} |\n`;
  }
  for (const impl of ['sluice', 'sluice-sync']) {
    const s = sum(impl, 'once1m', (r) => r.bytesPerKeyInclKey);
    if (s)
      md += `| ${impl}: bytes/key at 1M keys, key string included ≤ ${MAX_BYTES_PER_KEY} | ${fmtSummary(s, bytes)} | ${s.max <= MAX_BYTES_PER_KEY ? 'yes (every rep)' : s.median <= MAX_BYTES_PER_KEY ? 'median only' : 'no'} |\n`;
  }

  const flagged = runs.filter((r) => r.error || r.problems?.length);
  md += `\n## Problems\n\n${flagged.length ? flagged.map((r) => `- rep ${r.rep} ${r.impl} ${r.pattern}: ${r.error ?? r.problems.join('; ')}`).join('\n') : 'none: every run held the expected number of keys and allowed/denied as its pattern says.'}\n`;
  return md;
}

/** Pairs rep i of A with rep i of B: interleaving put them minutes apart at most, under similar load. */
function ratio(as, bs) {
  if (!as.length || !bs.length) return undefined;
  const med = (rs) => summarize(rs.map((r) => r.opsPerSec)).median;
  const paired = as
    .map((a) => {
      const b = bs.find((x) => x.rep === a.rep);
      return b ? a.opsPerSec / b.opsPerSec : NaN;
    })
    .filter(Number.isFinite);
  return { ofMedians: med(as) / med(bs), min: Math.min(...paired), max: Math.max(...paired) };
}

function verdict(median, min, target) {
  if (min >= target) return 'yes (every rep)';
  return median >= target ? 'median only' : 'no';
}
