/**
 * A reload that never stops the decisions for long: the config is read and validated on a worker thread
 * (config-worker.ts), its descriptor tree comes back in slices, and this thread rebuilds the tree and the
 * rules' limiters a slice at a time, yielding to the event loop every `sliceMs`; the finished RuleSet is
 * swapped in by the caller in one assignment. Until then the previous config decides, and a config with
 * any problem (or one over --max-config-bytes or --max-rules) is never swapped in: ConfigError.
 */
import { Worker } from 'node:worker_threads';
import { ConfigError, emptyLevel, wildcardOf } from './config.js';
import type { ConfigOptions, DescriptorNode, DomainConfig, Level, RuleSpec } from './config.js';
import type { HeaderEntry } from '../codecs/nginx-request.js';
import type { Policy } from 'sluice/kit';
import { internalized } from '../codecs/intern.js';
import { RuleBuilder, RuleSet } from './rules.js';
import { collectYoung } from './young-gc.js';
import type { RuleSetOptions } from './rules.js';

/** One descriptor of the tree, depth first; `depth` 0 is a domain's top level. */
export interface NodeRecord {
  readonly domain: number;
  readonly depth: number;
  readonly key: string;
  readonly value: string | undefined;
  readonly rule: RuleSpec | undefined;
}

/** What the worker sends: the problems, or the domains and then slices of their nodes, one per request. */
export type ConfigMessage =
  | { readonly type: 'problems'; readonly problems: readonly string[] }
  | {
      readonly type: 'domains';
      readonly files: readonly string[];
      readonly domains: readonly {
        domain: string;
        file: string;
        httpDescriptors: readonly (readonly HeaderEntry[])[];
        source: string;
      }[];
    }
  | { readonly type: 'nodes'; readonly nodes: readonly NodeRecord[]; readonly last: boolean };

/** The children of a node that has none: one shared level, never written (a first child replaces it). */
const NO_CHILDREN: Level = Object.freeze({ exact: new Map(), wildcards: Object.freeze([]) as never, byKey: new Map() });

/** Longest run of work on this thread between two yields to the event loop. */
export const SLICE_MS = 2;
/** Nodes per message from the worker: small enough that taking one in is well under SLICE_MS. */
const SLICE_NODES = 256;
/**
 * Nodes placed between two scavenges run on purpose (young-gc.ts): few enough that copying what they made
 * (about 1.5 KB a rule) stops the thread well under a millisecond, many enough that a scavenge's fixed
 * cost stays small beside the placing.
 */
const COLLECT_NODES = 512;

/** `s`, or the copy of its text `shared` already holds. */
function share(shared: Map<string, string>, s: string): string {
  const held = shared.get(s);
  if (held !== undefined) return held;
  shared.set(s, s);
  return s;
}

const NO_NAMES: readonly string[] = Object.freeze([]);

/**
 * A rule as it came from the worker, made small for the many reloads place: each message brings its own
 * copy of every string (the domain, the unit, the algorithm) and objects whose fields were added one at a
 * time (so held in a separate property array); here one copy of each repeated text, the policy's name the
 * rule's id (it is), and objects of one fixed shape. Fewer, smaller objects are fewer for each scavenge to
 * copy and each mark to trace.
 */
function placedSpec(spec: RuleSpec, shared: Map<string, string>): RuleSpec {
  // Internalized: one flat copy, made in the old generation (young ones would be copied twice).
  const id = internalized(spec.id);
  const p = spec.policy;
  const policy: Policy | undefined =
    p === undefined
      ? undefined
      : Object.freeze({
          name: id,
          algorithm: share(shared, p.algorithm) as Policy['algorithm'],
          limit: p.limit,
          windowMs: p.windowMs,
          capacity: p.capacity,
          burst: p.burst,
          mode: share(shared, p.mode) as Policy['mode'],
          delay: p.delay,
          nodelay: p.nodelay,
          buckets: p.buckets,
          block: p.block,
          calendar: p.calendar,
          countRejected: p.countRejected,
        });
  return {
    id,
    domain: share(shared, spec.domain),
    name: spec.name,
    replaces: spec.replaces.length === 0 ? NO_NAMES : spec.replaces,
    shadowMode: spec.shadowMode,
    detailedMetric: spec.detailedMetric,
    metricPath: spec.metricPath,
    sharedValues: spec.sharedValues,
    quotaMode: spec.quotaMode,
    metadata: spec.metadata,
    unlimited: spec.unlimited,
    requestsPerUnit: spec.requestsPerUnit,
    unit: share(shared, spec.unit) as RuleSpec['unit'],
    policy,
  };
}

/** The worker's entry, and how to start it: from the TypeScript source (tests, tsx), tsx is registered in it first. */
function startWorker(data: object): Worker {
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./config-worker.js', import.meta.url), { workerData: data });
  const entry = new URL('./config-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`,
    { eval: true, workerData: data },
  );
}

/**
 * Reads, validates and builds the config at `path` as a new RuleSet, handing over the state of `previous`'s
 * unchanged rules; rejects with ConfigError for any problem. Decisions go on meanwhile on `previous`.
 */
export function loadRulesOffThread(
  path: string,
  options: ConfigOptions,
  ruleOptions: RuleSetOptions,
  previous: RuleSet | undefined,
  sliceMs = SLICE_MS,
): Promise<RuleSet> {
  return new Promise<RuleSet>((resolve, reject) => {
    const worker = startWorker({ path, options, sliceNodes: SLICE_NODES });
    const builder = new RuleBuilder(ruleOptions, previous);
    const domains = new Map<string, DomainConfig & { rules: RuleSpec[] }>();
    const byIndex: (DomainConfig & { rules: RuleSpec[] })[] = [];
    /** Per domain, the levels from its top down to the last node placed: where the next node goes. */
    const stacks: Level[][] = [];
    /** Per domain, the node owning each level of its stack (undefined for the top). */
    const owners: (DescriptorNode | undefined)[][] = [];
    /** This reload's one copy of each repeated text (see placedSpec). */
    const shared = new Map<string, string>();
    let files: readonly string[] = [];
    let queue: readonly NodeRecord[] = [];
    /** Whether a slice has been asked of the worker and not come yet. */
    let asked = false;
    let at = 0;
    let last = false;
    let settled = false;
    let stepping = false;

    /**
     * Asks the worker for its next slice once fewer than a slice's nodes wait here: it prepares one while
     * this thread places another, and no more, so the queue (whose records are all young objects, each
     * copied by every scavenge while it waits) stays at most two slices long.
     */
    const askIfLow = () => {
      if (last || asked || queue.length - at >= SLICE_NODES) return;
      asked = true;
      worker.postMessage('next');
    };

    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      queue = [];
      void worker.terminate();
      reject(
        e instanceof ConfigError
          ? e
          : new ConfigError([`${path}: the config could not be loaded: ${(e as Error)?.message ?? String(e)}`]),
      );
    };

    const place = (r: NodeRecord) => {
      const stack = stacks[r.domain]!;
      const owner = owners[r.domain]!;
      let level = stack[r.depth]!;
      if (level === NO_CHILDREN) {
        // The first child of its node: only now does the node get a level of its own.
        level = emptyLevel();
        (owner[r.depth] as { children: Level }).children = level;
        stack[r.depth] = level;
      }
      const key = internalized(r.key);
      const rule = r.rule === undefined ? undefined : placedSpec(r.rule, shared);
      // Most nodes are leaves: they share one empty level rather than each holding two Maps and an array.
      const node: DescriptorNode = { key, value: r.value, rule, children: NO_CHILDREN };
      if (r.value === undefined) level.byKey.set(key, node);
      else {
        // Internalized, so flat (joined, it would be a cons string and a flat copy once hashed) and made
        // in the old generation, where no scavenge copies it.
        level.exact.set(internalized(`${key}\u0000${r.value}`), node);
        const wildcard = wildcardOf(key, r.value, node);
        if (wildcard !== undefined) level.wildcards.push(wildcard);
      }
      stack.length = r.depth + 1;
      stack.push(node.children);
      owner.length = r.depth + 1;
      owner.push(node);
      if (rule !== undefined) {
        byIndex[r.domain]!.rules.push(rule);
        builder.add(rule);
      }
    };

    /** Nodes placed since the last scavenge (collectYoung): the young objects the next one copies. */
    let placed = 0;

    /** Places queued nodes for at most sliceMs, then yields; asks for more, or finishes. */
    const step = () => {
      stepping = false;
      if (settled) return;
      const t0 = performance.now();
      try {
        while (at < queue.length) {
          place(queue[at++]!);
          placed++;
          if ((at & 3) === 0 && performance.now() - t0 >= sliceMs) break;
        }
      } catch (e) {
        fail(e);
        return;
      }
      askIfLow();
      if (at < queue.length || (!last && placed >= COLLECT_NODES)) {
        // More to place, or a slice's worth placed while the worker prepares the next: a decision may run,
        // then (in a turn of its own) the scavenge of what was placed, then the next slice.
        stepping = true;
        setImmediate(placed >= COLLECT_NODES ? collect : step);
        return;
      }
      if (!last) return; // the next slice has been asked for
      settled = true;
      queue = [];
      void worker.terminate();
      resolve(new RuleSet({ domains, files }, ruleOptions, previous, builder));
    };

    /** Between two slices: a scavenge of the young objects the placed nodes made, between decisions. */
    const collect = () => {
      stepping = false;
      if (settled) return;
      collectYoung();
      placed = 0;
      if (at < queue.length || last) {
        stepping = true;
        setImmediate(step);
      }
    };

    worker.on('message', (m: ConfigMessage) => {
      if (settled) return;
      if (m.type === 'problems') fail(new ConfigError(m.problems));
      else if (m.type === 'domains') {
        files = m.files;
        for (const d of m.domains) {
          const domain = internalized(d.domain);
          const config = {
            domain,
            file: d.file,
            root: emptyLevel(),
            rules: [] as RuleSpec[],
            httpDescriptors: d.httpDescriptors,
            source: d.source,
          };
          domains.set(domain, config);
          stacks.push([config.root]);
          owners.push([undefined]);
          byIndex.push(config);
        }
        asked = true;
        worker.postMessage('next');
      } else {
        asked = false;
        queue = queue.length === at ? m.nodes : queue.slice(at).concat(m.nodes);
        at = 0;
        last = m.last;
        askIfLow(); // the worker prepares the next slice while this one is placed
        if (!stepping) {
          stepping = true;
          setImmediate(step);
        }
      }
    });
    worker.on('error', fail);
    // Its last messages are taken first: a worker that posted its problems and ended is not a crash.
    worker.on('exit', (code) => setImmediate(() => fail(new Error(`the config reader stopped (exit code ${code})`))));
  });
}
