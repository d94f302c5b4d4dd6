// What the dashboard shows a newcomer: a rule's limit in words ("10 per second", not "10 per 1000 ms"), and
// a /v1/check request that the running config's first limiting rule matches, so the first curl they paste
// is decided by a rule (an answer no rule decided says `matched: false`).
import type { DescriptorNode, Level, RuleSpec, ServiceConfig } from '../config/config.js';

const UNITS: readonly [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
];

/** `1000` -> 'second', `60000` -> 'minute', `90000` -> '90 seconds', `1500` -> '1500 ms'. */
export function windowInWords(windowMs: number): string {
  for (const [ms, unit] of UNITS) {
    if (windowMs === ms) return unit;
    if (windowMs % ms === 0) return `${windowMs / ms} ${unit}s`;
  }
  return `${windowMs} ms`;
}

/** A rule's limit as the dashboard lists it: `10 per second (token-bucket, burst 20)`. */
export function limitInWords(r: RuleSpec): string {
  if (r.unlimited) return 'unlimited';
  if (r.policy === undefined) return `${r.requestsPerUnit} per ${r.unit.toLowerCase()}`;
  const burst = r.policy.burst !== r.policy.limit ? `, burst ${r.policy.burst}` : '';
  return `${r.requestsPerUnit} per ${windowInWords(r.policy.windowMs)} (${r.policy.algorithm}${burst})`;
}

/**
 * The body of a /v1/check request matched by the first rule (in file order of the first domain) that
 * limits (neither unlimited nor 0 a unit), or of any rule if none does; undefined for a config with no rule.
 */
export function exampleCheckBody(config: ServiceConfig): string | undefined {
  const domain = [...config.domains.values()][0];
  if (domain === undefined) return undefined;
  const paths: { entries: [string, string][]; rule: RuleSpec }[] = [];
  const walk = (level: Level, above: [string, string][]) => {
    const nodes: [DescriptorNode, string][] = [
      ...[...level.byKey.values()].map((n) => [n, 'demo'] as [DescriptorNode, string]),
      // A wildcard's node is in `exact` too (as its literal value); it is taken below with a value it matches.
      ...[...level.exact.values()]
        .filter((n) => !n.value!.includes('*'))
        .map((n) => [n, n.value!] as [DescriptorNode, string]),
      ...level.wildcards.map((w) => [w.node, w.parts.join('demo')] as [DescriptorNode, string]),
    ];
    for (const [node, value] of nodes) {
      const entries: [string, string][] = [...above, [node.key, value]];
      if (node.rule !== undefined) paths.push({ entries, rule: node.rule });
      walk(node.children, entries);
    }
  };
  walk(domain.root, []);
  const limiting = paths.find((p) => !p.rule.unlimited && p.rule.requestsPerUnit > 0) ?? paths[0];
  if (limiting === undefined) return undefined;
  const descriptor = Object.fromEntries(limiting.entries);
  // The short form {"key": ...} when the config has one domain and the rule is on the descriptor key `key`.
  if (config.domains.size === 1 && limiting.entries.length === 1 && limiting.entries[0]![0] === 'key')
    return JSON.stringify({ key: limiting.entries[0]![1] });
  return JSON.stringify({ domain: domain.domain, descriptors: [descriptor] });
}
