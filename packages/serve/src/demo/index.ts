// `sluice demo`: plays the same traces through every algorithm and renders the measured comparison as text.
import { compareOnTrace, LEASE_BYTES, LOG_ENTRY_BYTES, SHORT_WINDOW_MS, type Measurement } from './compare.js';
import { BURST, CONCURRENCY, LIMIT, WINDOW_MS } from './scale.js';
import { formatTable, type Column } from '../support/table.js';
import { shaperNote, takeaway, timesLimit } from './takeaways.js';
import { demoTraces, type Trace } from './traces.js';

export { compareOnTrace, measure, type Measurement } from './compare.js';
export { CONTENDERS, type Contender } from './lineup.js';
export { demoTraces, type Trace } from './traces.js';

const seconds = (ms: number) => `${ms / 1000} s`;

const COLUMNS: readonly Column[] = [
  { header: 'algorithm', align: 'left' },
  { header: 'admitted', align: 'right' },
  { header: `max in any ${seconds(WINDOW_MS)}`, align: 'right' },
  { header: `max in any ${seconds(SHORT_WINDOW_MS)}`, align: 'right' },
  { header: 'state/key', align: 'right' },
  { header: 'max delay', align: 'right' },
];

function row(m: Measurement): string[] {
  return [
    m.label,
    String(m.admitted),
    `${m.maxInWindow} (${timesLimit(m.maxInWindow)})`,
    String(m.maxInShortWindow),
    `${m.stateBytes} B`,
    m.maxDelayMs > 0 ? `${m.maxDelayMs} ms` : '-',
  ];
}

function section(trace: Trace, results: readonly Measurement[]): string[] {
  const offered = results[0]?.offered ?? 0;
  return [
    `${trace.title}: ${trace.description}; ${offered} units offered`,
    ...formatTable(COLUMNS, results.map(row)).map((line) => `  ${line}`),
    `  → ${takeaway(trace, results)}`,
    `    ${shaperNote(results)}`,
  ];
}

const INTRO = [
  'sluice demo: the same traffic played through every algorithm on an injected clock. Every number is measured.',
  `Policy: ${LIMIT} requests per ${seconds(WINDOW_MS)} (buckets: burst ${BURST}). ` +
    `Concurrency: ${CONCURRENCY.inFlight} in flight, each request released ${seconds(CONCURRENCY.holdMs)} after admission.`,
];

const FOOTNOTES = [
  'Notes',
  `- Counts are cost units. "max in any ${seconds(WINDOW_MS)}" is the most admitted in any true sliding window`,
  `  (t − ${seconds(WINDOW_MS)}, t], counted exactly from the admitted timestamps, with its multiple of the limit.`,
  `- state/key: fixed-size state is slots × 8 B. sliding-log: the most entries its arrays held × ${LOG_ENTRY_BYTES} B`,
  '  (time, cost); same-millisecond requests share an entry, and aged-out entries stay until compaction.',
  `  concurrency: the most leases held × ${LEASE_BYTES} B, plus the lease id strings.`,
  '- A bucket admits up to burst + limit in one window: a full bucket, then a window of refill. gcra and the',
  '  leaky-bucket meter decide exactly as the token bucket does.',
  `- Concurrency bounds requests in flight, not a rate: ${CONCURRENCY.inFlight} in flight, each held ${seconds(CONCURRENCY.holdMs)}, is ` +
    `${(CONCURRENCY.inFlight * 1000) / CONCURRENCY.holdMs}/s by Little's law,`,
  '  but its numbers move with the hold time, so compare them with care.',
];

/** Runs every trace through every contender and returns the report as plain text. */
export async function runDemo(): Promise<string> {
  const lines = [...INTRO];
  for (const trace of demoTraces()) lines.push('', ...section(trace, await compareOnTrace(trace)));
  lines.push('', ...FOOTNOTES);
  return `${lines.join('\n')}\n`;
}
