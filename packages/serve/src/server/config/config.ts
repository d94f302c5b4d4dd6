/**
 * Loads the service's YAML config: Envoy's ratelimit format as it is, plus sluice's `algorithm`, `burst`
 * and `window` in `rate_limit` and an `http_descriptors` block for the nginx endpoint. Validation walks the
 * whole file and reports every problem at once, each as `file:line:column: path: message`, so an operator
 * fixes a file in one pass instead of one error per restart.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Node as YamlNode, YAMLMap } from 'yaml';
import { type AlgorithmName, ALGORITHMS, compilePolicy, parseDuration, type Policy, SluiceError } from 'sluice/kit';
import { internalized } from '../codecs/intern.js';
import type { HeaderEntry } from '../codecs/nginx-request.js';
import { UNITS } from '../codecs/rls-types.js';
import type { UnitName } from '../codecs/rls-types.js';

/** A `rate_limit` block, validated. */
export interface RuleSpec {
  /** Envoy's stats key: `domain.key_value.key`, unique per rule; names the rule in metrics and state. */
  readonly id: string;
  readonly domain: string;
  /** `rate_limit.name`, the handle `replaces` refers to. */
  readonly name: string | undefined;
  readonly replaces: readonly string[];
  readonly shadowMode: boolean;
  /** `detailed_metric`: the rule's metrics are kept per descriptor value, as Envoy's detailed stats key. */
  readonly detailedMetric: boolean;
  /**
   * `value_to_metric` on some descriptor of the rule's path: per level, the configured composite key
   * (`key`, `key_value`, `key_prefix*`) that names the rule's metrics, or undefined where the request's
   * own value goes in (`key_<value>`). Undefined when no level sets it.
   */
  readonly metricPath: readonly (string | undefined)[] | undefined;
  /**
   * `share_threshold` on a wildcard descriptor of the rule's path: per level, the pattern (`files/*`) that
   * stands for every value it matches in the state key, so they share one limit; undefined where the
   * value keys the state as usual. Undefined when no level sets it.
   */
  readonly sharedValues: readonly (string | undefined)[] | undefined;
  /**
   * `quota_mode`: over its limit, the rule does not deny on its own; the request is denied only when every
   * quota-mode descriptor of it is over (envoyproxy/ratelimit's soft quota).
   */
  readonly quotaMode: boolean;
  /** The descriptor's `metadata` as written (accepted; not sent, see docs/service.md). */
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly unlimited: boolean;
  /** `requests_per_unit`; 0 rejects every request, as in Envoy. */
  readonly requestsPerUnit: number;
  /** Envoy's unit for `current_limit`; 'UNKNOWN' when a sluice `window` is not one whole unit. */
  readonly unit: UnitName | 'UNKNOWN';
  /** The compiled sluice policy; undefined for `unlimited` or a limit of 0. */
  readonly policy: Policy | undefined;
}

/** One descriptor of the tree: matched by key+value, by a wildcard value (`foo*`, `bar*b`), or by key alone. */
export interface DescriptorNode {
  readonly key: string;
  readonly value: string | undefined;
  readonly rule: RuleSpec | undefined;
  readonly children: Level;
}

/** The descriptors of one nesting level, indexed the way matching looks them up. */
export interface Level {
  /** `key\u0000value` → node. */
  readonly exact: Map<string, DescriptorNode>;
  /** Wildcard values, in file order: the first that matches wins (envoyproxy/ratelimit's order). */
  readonly wildcards: Wildcard[];
  /** key → node with no value. */
  readonly byKey: Map<string, DescriptorNode>;
}

/**
 * A value with `*` anywhere, each matching zero or more characters, as envoyproxy/ratelimit matches them
 * since its #1085 (`foo*`, `bar*b`, `foo*bar*baz`): split on `*` once, at load.
 */
export interface Wildcard {
  readonly key: string;
  /** The text before the first `*`. */
  readonly prefix: string;
  /** The value split on `*`: at least two parts, the first the prefix and the last the suffix. */
  readonly parts: readonly string[];
  /** The parts' total length: a shorter value cannot match. */
  readonly fixed: number;
  readonly node: DescriptorNode;
}

/** The wildcard of a descriptor whose value holds `*`; undefined for a plain value. */
export function wildcardOf(key: string, value: string, node: DescriptorNode): Wildcard | undefined {
  if (!value.includes('*')) return undefined;
  const parts = value.split('*');
  let fixed = 0;
  for (const p of parts) fixed += p.length;
  return { key, prefix: parts[0]!, parts, fixed, node };
}

/** Whether `value` matches the wildcard: its first part at the start, its last at the end, the others in order between. */
export function wildcardMatches(w: Wildcard, value: string): boolean {
  const parts = w.parts;
  const n = parts.length;
  if (value.length < w.fixed || !value.startsWith(w.prefix)) return false;
  const suffix = parts[n - 1]!;
  if (n === 2 && suffix === '') return true; // `foo*`, the common one
  if (!value.endsWith(suffix)) return false;
  const end = value.length - suffix.length;
  let at = w.prefix.length;
  for (let i = 1; i < n - 1; i++) {
    const part = parts[i]!;
    const found = value.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

export interface DomainConfig {
  readonly domain: string;
  readonly file: string;
  readonly root: Level;
  readonly rules: readonly RuleSpec[];
  /** Descriptors the nginx endpoint builds from request headers. */
  readonly httpDescriptors: readonly (readonly HeaderEntry[])[];
  /** The file as written, for the dashboard. */
  readonly source: string;
}

export interface ServiceConfig {
  readonly domains: ReadonlyMap<string, DomainConfig>;
  readonly files: readonly string[];
}

/** Every problem found in a config, already formatted `file:line:column: message`. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

const ROOT_KEYS = ['domain', 'descriptors', 'http_descriptors'];
const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'shadow_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'quota_mode',
  'metadata',
  'descriptors',
];
const RATE_LIMIT_KEYS = ['unit', 'requests_per_unit', 'unlimited', 'name', 'replaces', 'algorithm', 'burst', 'window'];
/** The service decides and answers; it cannot hold a request (shaper) or learn when one ends (concurrency). */
const SERVICE_ALGORITHMS = ALGORITHMS.filter((a) => a !== 'concurrency');
const MAX_UINT32 = 4_294_967_295;

/** Lists the YAML files a `--config` path names: the file itself, or every .yaml/.yml in the folder. */
export function configFiles(path: string): string[] {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new ConfigError([`${path}: cannot read the config: no such file or directory`]);
  }
  if (!stat.isDirectory()) return [path];
  const files = readdirSync(path)
    .filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('.'))
    .sort()
    .map((f) => join(path, f));
  if (files.length === 0) throw new ConfigError([`${path}: the config folder holds no .yaml or .yml file`]);
  return files;
}

/** Default --max-config-bytes: 16 MiB of YAML, about 200,000 one-line rules. */
export const MAX_CONFIG_BYTES = 16 * 1024 * 1024;
/** Default --max-rules. */
export const MAX_RULES = 100_000;

export interface ConfigOptions {
  /**
   * Envoy ratelimit's MERGE_DOMAIN_CONFIG: files that name the same domain add up to one domain. A top-level
   * descriptor defined in two of them is still an error; a `replaces` may name a rule of any of them.
   */
  readonly mergeDomains?: boolean;
  /** Most bytes of YAML, all files together, read before parsing (--max-config-bytes). Default MAX_CONFIG_BYTES. */
  readonly maxBytes?: number;
  /** Most rate_limit blocks, all domains together (--max-rules). Default MAX_RULES. */
  readonly maxRules?: number;
}

/**
 * The config's files and their texts, once their sizes (read first, from the file system) are within
 * `maxBytes`: a config too big to parse is refused before it is read.
 */
export function readConfigFiles(path: string, options: ConfigOptions = {}): { file: string; text: string }[] {
  const files = configFiles(path);
  const maxBytes = options.maxBytes ?? MAX_CONFIG_BYTES;
  let bytes = 0;
  for (const f of files) bytes += statSync(f).size;
  if (bytes > maxBytes) {
    const what = files.length === 1 ? basename(files[0]!) : `${path} (${files.length} files)`;
    throw new ConfigError([`${what}: the config is ${bytes} bytes; at most ${maxBytes} (--max-config-bytes)`]);
  }
  return files.map((file) => ({ file, text: readFileSync(file, 'utf8') }));
}

/** Reads and validates a config file or folder. Throws ConfigError listing every problem. */
export function loadConfig(path: string, options: ConfigOptions = {}): ServiceConfig {
  return parseConfig(readConfigFiles(path, options), options);
}

/** Validates config texts (one domain per file, unless merged). Throws ConfigError listing every problem. */
export function parseConfig(
  sources: readonly { file: string; text: string }[],
  options: ConfigOptions = {},
): ServiceConfig {
  const problems: string[] = [];
  const domains = new Map<string, DomainConfig>();
  /** With mergeDomains: the files each domain has come from so far, for the problems of the next one. */
  const filesOf = new Map<string, string[]>();
  /** `replaces` entries naming no rule of their own file: with mergeDomains, another file may have it. */
  const unresolved: { domain: string; name: string; problem: string }[] = [];
  for (const { file, text } of sources) {
    const parsed = parseDomain(file, text, problems, options.mergeDomains === true);
    if (parsed === undefined) continue;
    const d = parsed.config;
    for (const r of parsed.unresolvedReplaces) unresolved.push({ domain: d.domain, ...r });
    const other = domains.get(d.domain);
    if (other === undefined) {
      domains.set(internalized(d.domain), d); // interned for the lookup per request, as descriptor keys
      filesOf.set(d.domain, [basename(file)]);
    } else if (options.mergeDomains === true) {
      const earlier = filesOf.get(d.domain)!;
      domains.set(other.domain, mergeDomain(other, d, earlier, problems));
      earlier.push(basename(file));
    } else
      problems.push(
        `${basename(file)}: duplicate domain '${d.domain}', also in ${basename(other.file)} (--merge-domain-config merges them)`,
      );
  }
  for (const r of unresolved) {
    if (!domains.get(r.domain)?.rules.some((rule) => rule.name === r.name)) problems.push(r.problem);
  }
  const maxRules = options.maxRules ?? MAX_RULES;
  let rules = 0;
  for (const d of domains.values()) rules += d.rules.length;
  if (rules > maxRules) {
    const what = sources.length === 1 ? basename(sources[0]!.file) : `${sources.length} files`;
    problems.unshift(`${what}: the config holds ${rules} rules; at most ${maxRules} (--max-rules)`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { domains, files: sources.map((s) => s.file) };
}

class Walker {
  readonly lines = new LineCounter();
  /** Every `replaces` entry, checked once all names of the domain are known. */
  readonly replacesSeen: { name: string; node: YamlNode; path: string }[] = [];
  constructor(
    readonly name: string,
    readonly problems: string[],
  ) {}

  at(node: YamlNode | null | undefined, fallbackOffset: number, path: string, message: string): void {
    this.problems.push(this.problem(node, fallbackOffset, path, message));
  }

  /** `file:line:col: path: message` for a node. */
  problem(node: YamlNode | null | undefined, fallbackOffset: number, path: string, message: string): string {
    const offset = node?.range?.[0] ?? fallbackOffset;
    const { line, col } = this.lines.linePos(offset);
    return `${this.name}:${line}:${col}: ${path ? `${path}: ` : ''}${message}`;
  }
}

/** Problems come out in file order, whatever order the checks ran in. */
function byPosition(a: string, b: string): number {
  const pa = /^[^:]*:(\d+):(\d+):/.exec(a);
  const pb = /^[^:]*:(\d+):(\d+):/.exec(b);
  if (pa === null || pb === null) return pa === null ? (pb === null ? 0 : 1) : -1;
  return Number(pa[1]) - Number(pb[1]) || Number(pa[2]) - Number(pb[2]);
}

/**
 * A domain's file parsed: its config, and, when merging, the `replaces` that name no rule of that file
 * (with their problem, reported if no other file of the domain has the rule either).
 */
interface ParsedDomain {
  readonly config: DomainConfig;
  readonly unresolvedReplaces: readonly { name: string; problem: string }[];
}

function parseDomain(file: string, text: string, all: string[], deferReplaces: boolean): ParsedDomain | undefined {
  const problems: string[] = [];
  try {
    return parseDomainInto(file, text, problems, deferReplaces);
  } finally {
    all.push(...problems.sort(byPosition));
  }
}

function parseDomainInto(
  file: string,
  text: string,
  problems: string[],
  deferReplaces: boolean,
): ParsedDomain | undefined {
  const w = new Walker(basename(file), problems);
  const doc = parseDocument(text, { lineCounter: w.lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) {
      const { line, col } = w.lines.linePos(e.pos[0]);
      problems.push(`${w.name}:${line}:${col}: invalid YAML: ${e.message.split('\n')[0]}`);
    }
    return undefined;
  }
  const root = doc.contents;
  if (!isMap(root)) {
    w.at(root, 0, '', `the file must be a map with 'domain' and 'descriptors'`);
    return undefined;
  }
  checkKeys(w, root, '', ROOT_KEYS);
  const domainNode = root.get('domain', true) as YamlNode | undefined;
  const domain = scalarString(domainNode);
  if (domain === undefined || domain === '') {
    w.at(
      domainNode,
      root.range?.[0] ?? 0,
      'domain',
      domainNode === undefined ? `'domain' is required` : `must be a non-empty string, got ${quote(domainNode)}`,
    );
  }
  const rules: RuleSpec[] = [];
  const top = emptyLevel();
  const descriptors = root.get('descriptors', true) as YamlNode | undefined;
  if (descriptors !== undefined)
    loadLevel(w, descriptors, 'descriptors', `${domain ?? ''}.`, domain ?? '', top, rules, []);
  const names = new Set(rules.map((r) => r.name).filter((n) => n !== undefined));
  const unresolvedReplaces: { name: string; problem: string }[] = [];
  for (const r of w.replacesSeen) {
    if (names.has(r.name)) continue;
    const problem = w.problem(
      r.node,
      0,
      r.path,
      `replaces '${r.name}', but no rate_limit in domain '${domain}' has that name`,
    );
    if (deferReplaces) unresolvedReplaces.push({ name: r.name, problem });
    else problems.push(problem);
  }
  const httpDescriptors = loadHttpDescriptors(w, root.get('http_descriptors', true) as YamlNode | undefined);
  if (domain === undefined || domain === '') return undefined;
  return { config: { domain, file, root: top, rules, httpDescriptors, source: text }, unresolvedReplaces };
}

/** One domain from two files' parts: their top-level descriptors side by side, a key defined twice a problem. */
function mergeDomain(
  a: DomainConfig,
  b: DomainConfig,
  earlierFiles: readonly string[],
  problems: string[],
): DomainConfig {
  const twice = (what: string) =>
    problems.push(`${basename(b.file)}: domain '${b.domain}': ${what} is also defined in ${earlierFiles.join(', ')}`);
  const exact = new Map(a.root.exact);
  for (const [k, node] of b.root.exact) {
    if (exact.has(k)) twice(`descriptor key '${node.key}' value '${node.value}'`);
    else exact.set(k, node);
  }
  const byKey = new Map(a.root.byKey);
  for (const [k, node] of b.root.byKey) {
    if (byKey.has(k)) twice(`descriptor key '${k}' (no value)`);
    else byKey.set(k, node);
  }
  const wildcards = [...a.root.wildcards];
  for (const w of b.root.wildcards) {
    if (wildcards.some((x) => x.key === w.key && x.node.value === w.node.value))
      twice(`descriptor key '${w.key}' value '${w.node.value!}'`);
    else wildcards.push(w);
  }
  return {
    domain: a.domain,
    file: `${a.file}, ${b.file}`,
    root: { exact, wildcards, byKey },
    rules: [...a.rules, ...b.rules],
    httpDescriptors: [...a.httpDescriptors, ...b.httpDescriptors],
    source: `${a.source}\n# ---- ${basename(b.file)} ----\n${b.source}`,
  };
}

export function emptyLevel(): Level {
  return { exact: new Map(), wildcards: [], byKey: new Map() };
}

/** What a descriptor level contributes to the rules below it: its metric name part and its shared pattern. */
interface Step {
  /** The configured composite (`key`, `key_value`), or undefined with `value_to_metric` (the request's value goes in). */
  readonly metric: string | undefined;
  /** With `share_threshold` on a wildcard, the pattern that stands for every value it matches. */
  readonly shared: string | undefined;
}

function loadLevel(
  w: Walker,
  node: YamlNode,
  path: string,
  parentId: string,
  domain: string,
  level: Level,
  rules: RuleSpec[],
  trail: readonly Step[],
): void {
  if (!isSeq(node)) {
    w.at(node, 0, path, `must be a list of descriptors, got ${quote(node)}`);
    return;
  }
  node.items.forEach((item, i) => {
    const here = `${path}[${i}]`;
    if (!isMap(item)) {
      w.at(
        item as YamlNode,
        node.range?.[0] ?? 0,
        here,
        `a descriptor must be a map with 'key', got ${quote(item as YamlNode)}`,
      );
      return;
    }
    checkKeys(w, item, here, DESCRIPTOR_KEYS);
    const keyNode = item.get('key', true) as YamlNode | undefined;
    const rawKey = scalarString(keyNode);
    const keyless = rawKey === undefined || rawKey === '';
    if (keyless) {
      w.at(
        keyNode,
        item.range?.[0] ?? 0,
        `${here}.key`,
        keyNode === undefined ? `'key' is required` : `must be a non-empty string, got ${quote(keyNode)}`,
      );
      // The rest of the descriptor is still checked (its rate_limit, its children), so one run lists every problem.
    }
    // Interned: a request's decoded key (see decodeRlsJsonFast) then finds it in byKey by pointer.
    const key = internalized(keyless ? '' : rawKey);
    const valueNode = item.get('value', true) as YamlNode | undefined;
    let value: string | undefined;
    if (valueNode !== undefined) {
      value = scalarString(valueNode);
      if (value === undefined) w.at(valueNode, 0, `${here}.value`, `must be a string, got ${quote(valueNode)}`);
      else if (value === '') value = undefined; // Envoy treats an empty value as no value
    }
    const composite = value === undefined ? key : `${key}_${value}`;
    const id = parentId + composite;
    const shadowMode = bool(w, item, 'shadow_mode', here);
    const detailedMetric = bool(w, item, 'detailed_metric', here);
    const valueToMetric = bool(w, item, 'value_to_metric', here);
    const quotaMode = bool(w, item, 'quota_mode', here);
    const shareThreshold = bool(w, item, 'share_threshold', here);
    if (shareThreshold && value?.includes('*') !== true) {
      w.at(
        item.get('share_threshold', true) as YamlNode,
        0,
        `${here}.share_threshold`,
        `shares one limit among the values a wildcard matches, so 'value' must hold a '*' (got ${value === undefined ? 'no value' : `'${value}'`})`,
      );
    }
    const metadata = loadMetadata(w, item.get('metadata', true) as YamlNode | undefined, `${here}.metadata`);
    const steps = [
      ...trail,
      { metric: valueToMetric ? undefined : composite, shared: shareThreshold ? value : undefined },
    ];
    const rlNode = item.get('rate_limit', true) as YamlNode | undefined;
    const extras = {
      shadowMode,
      detailedMetric,
      quotaMode,
      metadata,
      metricPath: steps.some((s) => s.metric === undefined) ? steps.map((s) => s.metric) : undefined,
      sharedValues: steps.some((s) => s.shared !== undefined) ? steps.map((s) => s.shared) : undefined,
    };
    const rule = rlNode === undefined ? undefined : loadRateLimit(w, rlNode, `${here}.rate_limit`, id, domain, extras);
    if (rule !== undefined) rules.push(rule);
    const children = emptyLevel();
    const nested = item.get('descriptors', true) as YamlNode | undefined;
    if (nested !== undefined) loadLevel(w, nested, `${here}.descriptors`, `${id}.`, domain, children, rules, steps);
    const dn: DescriptorNode = { key, value, rule, children };
    if (keyless) return; // already a problem: not matched, and no duplicate to report
    const dupe = value === undefined ? level.byKey.has(key) : level.exact.has(`${key}\u0000${value}`);
    if (dupe) {
      w.at(keyNode, 0, here, `duplicate descriptor composite key '${id}'`);
      return;
    }
    if (value === undefined) level.byKey.set(key, dn);
    else {
      level.exact.set(`${key}\u0000${value}`, dn);
      const wildcard = wildcardOf(key, value, dn);
      if (wildcard !== undefined) level.wildcards.push(wildcard);
    }
  });
}

/** The per-descriptor settings a rule takes from its descriptor and the path to it. */
type RuleExtras = Pick<
  RuleSpec,
  'shadowMode' | 'detailedMetric' | 'quotaMode' | 'metadata' | 'metricPath' | 'sharedValues'
>;

function loadMetadata(w: Walker, node: YamlNode | undefined, path: string): Record<string, unknown> | undefined {
  if (node === undefined) return undefined;
  if (!isMap(node)) {
    w.at(node, 0, path, `must be a map, got ${quote(node)}`);
    return undefined;
  }
  return node.toJSON() as Record<string, unknown>;
}

function loadRateLimit(
  w: Walker,
  node: YamlNode,
  path: string,
  id: string,
  domain: string,
  extras: RuleExtras,
): RuleSpec | undefined {
  if (!isMap(node)) {
    w.at(node, 0, path, `must be a map with 'unit' and 'requests_per_unit', got ${quote(node)}`);
    return undefined;
  }
  const before = w.problems.length;
  checkKeys(w, node, path, RATE_LIMIT_KEYS);
  const get = (k: string) => node.get(k, true) as YamlNode | undefined;
  const unlimited = bool(w, node, 'unlimited', path);
  const nameNode = get('name');
  const name = nameNode === undefined ? undefined : scalarString(nameNode);
  if (nameNode !== undefined && (name === undefined || name === ''))
    w.at(nameNode, 0, `${path}.name`, `must be a non-empty string, got ${quote(nameNode)}`);
  const replaces: string[] = [];
  const replacesNode = get('replaces');
  if (replacesNode !== undefined) {
    if (!isSeq(replacesNode))
      w.at(
        replacesNode,
        0,
        `${path}.replaces`,
        `must be a list of { name: <rate_limit name> }, got ${quote(replacesNode)}`,
      );
    else {
      replacesNode.items.forEach((r, i) => {
        const n = isMap(r) ? scalarString(r.get('name', true) as YamlNode | undefined) : undefined;
        if (n === undefined || n === '')
          w.at(
            r as YamlNode,
            0,
            `${path}.replaces[${i}]`,
            `must be { name: <rate_limit name> }, got ${quote(r as YamlNode)}`,
          );
        else {
          replaces.push(n);
          w.replacesSeen.push({ name: n, node: r as YamlNode, path: `${path}.replaces[${i}]` });
        }
      });
    }
  }
  if (unlimited) {
    for (const k of ['unit', 'requests_per_unit', 'algorithm', 'burst', 'window']) {
      if (node.has(k)) w.at(get(k), 0, `${path}.${k}`, `'${k}' cannot be set on an unlimited rate limit`);
    }
    if (w.problems.length > before) return undefined;
    return {
      id,
      domain,
      name,
      replaces,
      ...extras,
      unlimited: true,
      requestsPerUnit: 0,
      unit: 'UNKNOWN',
      policy: undefined,
    };
  }

  const unitNode = get('unit');
  let unit: UnitName | undefined;
  if (unitNode !== undefined) {
    const u = scalarString(unitNode)?.toUpperCase();
    if (u === undefined || !Object.hasOwn(UNITS, u)) {
      w.at(
        unitNode,
        0,
        `${path}.unit`,
        `invalid rate limit unit ${quote(unitNode)}; use second, minute, hour, day, week, month or year`,
      );
    } else unit = u as UnitName;
  }
  const windowNode = get('window');
  let windowMs: number | undefined;
  if (windowNode !== undefined) {
    try {
      windowMs = parseDuration(isScalar(windowNode) ? windowNode.value : undefined, `'window'`);
    } catch (e) {
      w.at(windowNode, 0, `${path}.window`, stripPrefix(e));
    }
  }
  if (unitNode === undefined && windowNode === undefined)
    w.at(node, 0, path, `'unit' is required (or sluice's 'window')`);
  const rpuNode = get('requests_per_unit');
  let rpu: number | undefined;
  if (rpuNode === undefined) w.at(node, 0, path, `'requests_per_unit' is required`);
  else {
    const v = isScalar(rpuNode) ? rpuNode.value : undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_UINT32) {
      w.at(
        rpuNode,
        0,
        `${path}.requests_per_unit`,
        `must be a whole number from 0 to ${MAX_UINT32}, got ${quote(rpuNode)}`,
      );
    } else rpu = v;
  }
  const algorithmNode = get('algorithm');
  let algorithm: AlgorithmName = 'fixed-window'; // Envoy's own service counts in fixed windows
  if (algorithmNode !== undefined) {
    const a = scalarString(algorithmNode);
    if (a === undefined || !(SERVICE_ALGORITHMS as string[]).includes(a)) {
      w.at(
        algorithmNode,
        0,
        `${path}.algorithm`,
        `unknown algorithm ${quote(algorithmNode)}; use ${SERVICE_ALGORITHMS.join(', ')}`,
      );
    } else algorithm = a as AlgorithmName;
  }
  const burstNode = get('burst');
  let burst: unknown;
  if (burstNode !== undefined) burst = isScalar(burstNode) ? burstNode.value : Number.NaN;
  if (w.problems.length > before || rpu === undefined) return undefined;

  const resolvedWindow = windowMs ?? UNITS[unit!];
  const reportedUnit: UnitName | 'UNKNOWN' =
    unit ?? (Object.keys(UNITS) as UnitName[]).find((u) => UNITS[u] === resolvedWindow) ?? 'UNKNOWN';
  let policy: Policy | undefined;
  if (rpu > 0) {
    try {
      policy = compilePolicy({
        name: id,
        algorithm,
        limit: rpu,
        window: resolvedWindow,
        ...(burst === undefined ? {} : { burst: burst as number }),
      });
    } catch (e) {
      w.at(burstNode ?? algorithmNode ?? node, 0, path, stripPrefix(e));
      return undefined;
    }
  } else if (burstNode !== undefined || algorithmNode !== undefined) {
    w.at(
      burstNode ?? algorithmNode,
      0,
      path,
      `a rate limit of 0 requests rejects everything; 'algorithm' and 'burst' do not apply`,
    );
    return undefined;
  }
  return { id, domain, name, replaces, ...extras, unlimited: false, requestsPerUnit: rpu, unit: reportedUnit, policy };
}

function loadHttpDescriptors(w: Walker, node: YamlNode | undefined): HeaderEntry[][] {
  if (node === undefined) return [];
  const path = 'http_descriptors';
  const shape = `a list of descriptors, each a list of { key: <descriptor key>, header: <request header> }`;
  if (!isSeq(node)) {
    w.at(node, 0, path, `must be ${shape}, got ${quote(node)}`);
    return [];
  }
  return node.items.map((d, i) => {
    if (!isSeq(d) || d.items.length === 0) {
      w.at(
        d as YamlNode,
        node.range?.[0] ?? 0,
        `${path}[${i}]`,
        `must be a non-empty list of { key, header }, got ${quote(d as YamlNode)}`,
      );
      return [];
    }
    return d.items.flatMap((e, j) => {
      const here = `${path}[${i}][${j}]`;
      if (!isMap(e)) {
        w.at(
          e as YamlNode,
          0,
          here,
          `must be { key: <descriptor key>, header: <request header> }, got ${quote(e as YamlNode)}`,
        );
        return [];
      }
      checkKeys(w, e, here, ['key', 'header']);
      const key = scalarString(e.get('key', true) as YamlNode | undefined);
      const header = scalarString(e.get('header', true) as YamlNode | undefined);
      if (!key) w.at(e, 0, here, `'key' must be a non-empty string`);
      if (!header || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header))
        w.at(e, 0, here, `'header' must be a request header name such as X-Real-IP`);
      return key && header ? [{ key, header: header.toLowerCase() }] : [];
    });
  });
}

function checkKeys(w: Walker, map: YAMLMap, path: string, known: readonly string[]): void {
  for (const pair of map.items) {
    const k = isScalar(pair.key) ? String(pair.key.value) : undefined;
    if (k === undefined || !known.includes(k)) {
      const norm = (x: string) => x.toLowerCase().replace(/[_-]/g, '');
      const like = k === undefined ? undefined : known.find((x) => norm(x) === norm(k));
      const hint = like === undefined ? `known keys are ${known.join(', ')}` : `did you mean '${like}'?`;
      w.at(
        pair.key as YamlNode,
        map.range?.[0] ?? 0,
        path,
        `unknown key ${k === undefined ? quote(pair.key as YamlNode) : `'${k}'`}; ${hint}`,
      );
    }
  }
}

function bool(w: Walker, map: YAMLMap, key: string, path: string): boolean {
  const n = map.get(key, true) as YamlNode | undefined;
  if (n === undefined) return false;
  if (isScalar(n) && typeof n.value === 'boolean') return n.value;
  w.at(n, 0, `${path}.${key}`, `must be true or false, got ${quote(n)}`);
  return false;
}

/** A scalar as a string, the way Envoy's YAML reader turns `value: 500` into "500". */
function scalarString(n: YamlNode | undefined | null): string | undefined {
  if (n === undefined || n === null || !isScalar(n)) return undefined;
  if (typeof n.value === 'string') return n.value;
  if (typeof n.value === 'number' || typeof n.value === 'boolean')
    return (n as { source?: string }).source ?? String(n.value);
  return undefined;
}

function quote(n: YamlNode | null | undefined): string {
  if (n === undefined || n === null) return 'nothing';
  if (isScalar(n)) return n.value === null ? 'null' : `'${String((n as { source?: string }).source ?? n.value)}'`;
  return isMap(n) ? 'a map' : isSeq(n) ? 'a list' : 'an alias';
}

function stripPrefix(e: unknown): string {
  if (e instanceof SluiceError) return e.message.replace(/^\[sluice\] (policy "[^"]*": )?/, '');
  throw e;
}
