/**
 * sluice/cloudflare: global limits on Cloudflare Workers with no external database. A Durable Object runs
 * one request at a time, so each key's decisions are atomic in its object; its storage keeps the state
 * across evictions, and an alarm deletes idle state. Runs in workerd only (it imports cloudflare:workers).
 *
 * @example
 * import { Limiter } from 'sluice';
 * import { DurableObjectStore } from 'sluice/cloudflare';
 * export { SluiceDurableObject } from 'sluice/cloudflare';
 * export default {
 *   async fetch(request, env) {
 *     const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 10, window: '1m' }, store: new DurableObjectStore({ namespace: env.SLUICE }) });
 *     const d = await limiter.limit(request.headers.get('cf-connecting-ip') ?? 'anonymous');
 *     return d.allowed ? new Response('ok') : new Response('slow down', { status: 429 });
 *   },
 * };
 */
export {
  DurableObjectStore,
  type DurableObjectStoreOptions,
  type SluiceNamespace,
  type SluiceObjectStub,
} from './store.js';
export { SluiceDurableObject } from './object.js';
export { ObjectEngine, SWEEP_GAP_MS, type ObjectRequest, type ObjectStorage } from './engine.js';
