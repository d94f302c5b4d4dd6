/**
 * Prometheus exposition through prom-client: the process's default metrics, and per-rule counters and a
 * latency histogram read from RuleStats at scrape time (custom collectors, so the hot path never touches
 * prom-client).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { LATENCY_BUCKETS } from './rule-stats.js';
import type { RuleStats } from './rule-stats.js';

type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

const COUNTERS: [keyof RuleStats, string, string][] = [
  [
    'totalHits',
    'sluice_rule_hits_total',
    'Hits decided per rule (a request counts its hits_addend), as Envoy total_hits.',
  ],
  ['overLimit', 'sluice_rule_over_limit_total', 'Hits over the limit per rule, shadow mode included.'],
  ['nearLimit', 'sluice_rule_near_limit_total', 'Hits within the limit once 80% of it was used.'],
  ['withinLimit', 'sluice_rule_within_limit_total', 'Hits within the limit per rule.'],
  ['shadowMode', 'sluice_rule_shadow_mode_total', 'Over-limit hits answered OK because the rule is in shadow mode.'],
  [
    'overLimitWithLocalCache',
    'sluice_rule_over_limit_with_local_cache_total',
    'Over-limit hits answered from the local deny cache.',
  ],
  [
    'storeErrors',
    'sluice_rule_store_errors_total',
    'Decisions the store could not make (answered by the failure mode or failed).',
  ],
  [
    'storeFull',
    'sluice_rule_store_full_total',
    'New keys the memory store had no room for, every key it could evict denying (decided by --memory-on-full).',
  ],
];

/** A rule's labels; a `detailed_metric` rule's series also carry the request's values as `descriptor`. */
function labelsOf(s: RuleStats): Record<string, string> {
  return s.descriptor === undefined
    ? { domain: s.domain, rule: s.rule }
    : { domain: s.domain, rule: s.rule, descriptor: s.descriptor };
}

/** A listener's shedding (issue 45): connections closed to make room, newcomers refused, gRPC calls shed. */
export interface Shedding {
  readonly listener: 'http' | 'grpc' | 'admin';
  readonly evicted: number;
  readonly refused: number;
  readonly callsShed?: number;
}

export function createMetrics(
  stats: () => RuleStats[],
  extra: {
    reloads: () => { ok: number; failed: number };
    globalShadowOverrides?: () => number;
    shedding?: () => Shedding[];
  },
): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const [field, name, help] of COUNTERS) {
    registry.registerMetric({
      name,
      help,
      type: 'counter',
      get: async () => ({
        name,
        help,
        type: 'counter',
        aggregator: 'sum',
        values: stats().map((s) => ({ value: s[field] as number, labels: labelsOf(s) })),
      }),
    } as never);
  }
  const hname = 'sluice_rule_decision_seconds';
  const hhelp = 'Time to decide one descriptor, per rule (store round trip included).';
  registry.registerMetric({
    name: hname,
    help: hhelp,
    type: 'histogram',
    get: async () => {
      const values: Value[] = [];
      for (const s of stats()) {
        const labels = labelsOf(s);
        let cumulative = 0;
        LATENCY_BUCKETS.forEach((le, i) => {
          cumulative += s.latencyBuckets[i]!;
          values.push({ value: cumulative, labels: { ...labels, le }, metricName: `${hname}_bucket` });
        });
        values.push({ value: s.latencyCount, labels: { ...labels, le: '+Inf' }, metricName: `${hname}_bucket` });
        values.push({ value: s.latencySum, labels, metricName: `${hname}_sum` });
        values.push({ value: s.latencyCount, labels, metricName: `${hname}_count` });
      }
      return { name: hname, help: hhelp, type: 'histogram', aggregator: 'sum', values };
    },
  } as never);
  for (const [field, name] of [
    ['ok', 'sluice_config_reloads_total'],
    ['failed', 'sluice_config_reload_failures_total'],
  ] as const) {
    const help = field === 'ok' ? 'Config reloads applied.' : 'Config reloads rejected (the old config stayed).';
    registry.registerMetric({
      name,
      help,
      type: 'counter',
      get: async () => ({
        name,
        help,
        type: 'counter',
        aggregator: 'sum',
        values: [{ value: extra.reloads()[field], labels: {} }],
      }),
    } as never);
  }
  const shadowed = extra.globalShadowOverrides;
  if (shadowed !== undefined) {
    const name = 'sluice_global_shadow_mode_total';
    const help = 'Requests answered OK by global shadow mode (--shadow-mode) although a rule was over its limit.';
    registry.registerMetric({
      name,
      help,
      type: 'counter',
      get: async () => ({
        name,
        help,
        type: 'counter',
        aggregator: 'sum',
        values: [{ value: shadowed(), labels: {} }],
      }),
    } as never);
  }
  const shedding = extra.shedding;
  if (shedding !== undefined) {
    const series: [string, string, (s: Shedding) => number | undefined][] = [
      [
        'sluice_connections_closed_for_room_total',
        'Idle connections closed at --max-connections or --max-connections-per-address to admit a new one, per listener.',
        (s) => s.evicted,
      ],
      [
        'sluice_connections_refused_total',
        'New connections refused at a connection cap because every connection they could replace had a request in flight, per listener.',
        (s) => s.refused,
      ],
      [
        'sluice_grpc_pending_calls_shed_total',
        "gRPC calls whose message had not arrived, ended (RESOURCE_EXHAUSTED) to give their place to another connection's call.",
        (s) => s.callsShed,
      ],
    ];
    for (const [name, help, read] of series) {
      const get = async () => ({
        name,
        help,
        type: 'counter',
        aggregator: 'sum',
        values: shedding().flatMap((s) =>
          read(s) === undefined ? [] : [{ value: read(s)!, labels: { listener: s.listener } }],
        ),
      });
      registry.registerMetric({ name, help, type: 'counter', get } as never);
    }
  }
  return registry;
}
