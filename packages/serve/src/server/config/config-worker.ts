/**
 * The worker thread of config-reload.ts: reads and validates the config off the thread that decides (the
 * YAML parse is most of a big reload), then hands its descriptor tree over depth first, one slice of nodes
 * per request, so the decision thread takes each in a few milliseconds.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError, loadConfig } from './config.js';
import type { ConfigOptions, Level, ServiceConfig } from './config.js';
import type { ConfigMessage, NodeRecord } from './config-reload.js';

const { path, options, sliceNodes } = workerData as { path: string; options: ConfigOptions; sliceNodes: number };
const port = parentPort!;
const post = (m: ConfigMessage) => port.postMessage(m);

function* nodesOf(domain: number, level: Level, depth: number): Generator<NodeRecord> {
  for (const map of [level.exact, level.byKey]) {
    for (const n of map.values()) {
      yield { domain, depth, key: n.key, value: n.value, rule: n.rule };
      yield* nodesOf(domain, n.children, depth + 1);
    }
  }
}

function* allNodes(config: ServiceConfig): Generator<NodeRecord> {
  let i = 0;
  for (const d of config.domains.values()) yield* nodesOf(i++, d.root, 0);
}

let config: ServiceConfig | undefined;
try {
  config = loadConfig(path, options);
} catch (e) {
  post({ type: 'problems', problems: e instanceof ConfigError ? e.problems : [`${path}: ${(e as Error).message}`] });
}
if (config !== undefined) {
  post({
    type: 'domains',
    files: config.files,
    domains: [...config.domains.values()].map((d) => ({
      domain: d.domain,
      file: d.file,
      httpDescriptors: d.httpDescriptors,
      source: d.source,
    })),
  });
  const nodes = allNodes(config);
  port.on('message', () => {
    const slice: NodeRecord[] = [];
    let next = nodes.next();
    while (next.done !== true) {
      slice.push(next.value);
      if (slice.length === sliceNodes) break;
      next = nodes.next();
    }
    post({ type: 'nodes', nodes: slice, last: next.done === true });
  });
}
