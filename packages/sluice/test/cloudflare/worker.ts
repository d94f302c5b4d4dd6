// The Worker that test/cloudflare/miniflare.test.ts runs in workerd: the store conformance suite on
// DurableObjectStore (per key, and sharded), and a /limit endpoint that decides one request.
import { DurableObjectStore, SluiceDurableObject, type SluiceNamespace } from '../../src/cloudflare/index.js';
import { Limiter, type AlgorithmName } from '../../src/index.js';
import { storeConformance } from '../contracts/store-conformance.js';
import { run } from '../../../../test/runtimes/shims/node-test.js';

interface Env {
  SLUICE: SluiceNamespace;
}

let env: Env | undefined;
const namespace = () => env!.SLUICE;
storeConformance(
  'durable-object (workerd)',
  () => new DurableObjectStore({ namespace: namespace(), clock: 'client' }),
  { runs: 25 },
);
storeConformance(
  'durable-object, 4 shards (workerd)',
  () => new DurableObjectStore({ namespace: namespace(), shards: 4, clock: 'client' }),
  { runs: 5 },
);

export { SluiceDurableObject };

/** One limiter for every request of this isolate, as an app keeps it. */
let shared: Limiter | undefined;

export default {
  async fetch(request: Request, e: Env): Promise<Response> {
    env = e;
    const url = new URL(request.url);
    const q = (name: string) => url.searchParams.get(name) ?? undefined;
    if (url.pathname === '/run') return Response.json(await run(q('filter') ?? ''));
    if (url.pathname === '/limit') {
      const algorithm = (q('algorithm') ?? 'gcra') as AlgorithmName;
      const shards = q('shards');
      const limiter = new Limiter({
        policy: { algorithm, limit: Number(q('limit') ?? 10), window: q('window') ?? '1d' },
        store: new DurableObjectStore({
          namespace: e.SLUICE,
          ...(shards === undefined ? {} : { shards: Number(shards) }),
        }),
      });
      return Response.json(await limiter.limit(q('key') ?? 'k'));
    }
    if (url.pathname === '/shared') {
      shared ??= new Limiter({
        policy: { algorithm: 'fixed-window', limit: 1, window: '1d' },
        store: new DurableObjectStore({ namespace: e.SLUICE }),
      });
      return Response.json(await shared.limit(q('key') ?? 'k'));
    }
    return new Response('not found', { status: 404 });
  },
};
