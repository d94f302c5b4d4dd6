// One process of the fleet in outbound-fleet.test.ts: a Gate on a RedisStore shared with the other
// workers, calling the test's rate-limited server through limitedFetch, and reporting what happened.
import type { PolicyOptions } from '../../../sluice/src/index.js';
import type { Store } from '../../../sluice/src/stores/store.js';
import { Gate, limitedFetch, type FetchLike } from '../../src/index.js';

const [redisUrl, prefix, name] = process.argv.slice(2) as [string, string, string];
// Specifiers in variables: this file must type-check before the Redis branch (and ioredis) are merged.
const redisModule = '../../../sluice/src/stores/redis/index.js';
const ioredisModule = 'ioredis';
const { RedisStore } = (await import(redisModule)) as { RedisStore: new (o: object) => Store };
const { Redis } = (await import(ioredisModule)) as {
  Redis: new (url: string) => { disconnect(): void; once(e: string, f: () => void): void };
};
const client = new Redis(redisUrl);
await new Promise<void>((r) => client.once('ready', r));
const store = new RedisStore({ client, prefix, timeoutMs: 5000, onError: 'closed' });

export interface Job {
  url: string;
  /** Calls that must complete. */
  calls: number;
  /** Calls that give up after `doomedMs` while still waiting. */
  doomed: number;
  doomedMs: number;
  tag: string;
  /** When set, a fleet-wide concurrency cap beside the rate. */
  inFlight?: number;
}

export interface Report {
  bodies: string[];
  failures: string[];
  doomedOutcomes: string[];
  events: { kind: 'send' | 'recv'; at: number; status?: number; retryAfterMs?: number }[];
}

process.on('message', async (m: Job | 'exit') => {
  if (m === 'exit') {
    client.disconnect();
    process.exit(0);
  }
  const policies: PolicyOptions[] = [{ name: 'api', algorithm: 'token-bucket', limit: 50, window: '1s', burst: 10 }];
  if (m.inFlight !== undefined)
    policies.push({ name: 'inflight', algorithm: 'concurrency', limit: m.inFlight, window: '1m' });
  const gate = new Gate({ policies, store, releasePollMs: 10 });
  const events: Report['events'] = [];
  const recording: FetchLike = async (input, init) => {
    // performance.timeOrigin + now(): one timeline across processes, to compare with the others' sends.
    events.push({ kind: 'send', at: performance.timeOrigin + performance.now() });
    const res = await fetch(input, init);
    const ra = res.headers.get('retry-after');
    events.push({
      kind: 'recv',
      at: performance.timeOrigin + performance.now(),
      status: res.status,
      retryAfterMs: ra === null ? undefined : Number(ra) * 1000,
    });
    return res;
  };
  const f = limitedFetch(gate, 'shared-api', { fetch: recording, backoffMs: 100 });
  const report: Report = { bodies: [], failures: [], doomedOutcomes: [], events };
  const live = Array.from({ length: m.calls }, (_, i) =>
    f(`${m.url}/v1/thing?id=${m.tag}-${name}-${i}`).then(
      async (r) => void report.bodies.push(r.status === 200 ? await r.text() : `status ${r.status}`),
      (e: unknown) => void report.failures.push(String(e)),
    ),
  );
  const doomed = Array.from({ length: m.doomed }, (_, i) =>
    f(`${m.url}/v1/thing?id=${m.tag}-${name}-doomed-${i}`, { signal: AbortSignal.timeout(m.doomedMs) }).then(
      (r) => void report.doomedOutcomes.push(`status ${r.status}`),
      (e: unknown) => void report.doomedOutcomes.push((e as Error).name),
    ),
  );
  await Promise.all([...live, ...doomed]);
  process.send!(report);
});
process.send!('ready');
