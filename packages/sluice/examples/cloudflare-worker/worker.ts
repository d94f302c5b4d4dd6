// A Hono app on Cloudflare Workers with global limits and no external database: each client's decisions
// run in a SluiceDurableObject (sluice's own algorithms on the object's storage), so every location sees
// one count. Deploy with `wrangler deploy` (wrangler.jsonc beside this file); test/cloudflare/ runs it in
// workerd through Miniflare.
import { Hono, type MiddlewareHandler } from 'hono';
import { getConnInfo } from 'hono/cloudflare-workers';
import { Limiter } from 'sluice';
import { DurableObjectStore, SluiceDurableObject, type SluiceNamespace } from 'sluice/cloudflare';
import { rateLimit } from 'sluice/hono';

// The Durable Object class must be exported by the Worker's main module under the name wrangler.jsonc binds.
export { SluiceDurableObject };

interface Env {
  SLUICE: SluiceNamespace;
}

const app = new Hono<{ Bindings: Env }>();

// Bindings exist per request, so the middleware is made on the first one and kept.
let perClient: MiddlewareHandler | undefined;
app.use('/api/*', (c, next) => {
  perClient ??= rateLimit({
    // 10 requests per minute per client address, at most 5 back to back, the same in every location.
    policy: { algorithm: 'gcra', limit: 10, window: '1m', burst: 5 },
    store: new DurableObjectStore({ namespace: c.env.SLUICE }),
    getConnInfo, // the client address from CF-Connecting-IP
    headers: 'draft-8',
  });
  return perClient(c, next);
});

app.get('/api/hello', (c) => c.json({ hello: 'world' }));

// Login attempts: a limiter called directly, keyed by account, on shards of keys (fewer, busier objects).
app.post('/login', async (c) => {
  const { account } = await c.req.json<{ account?: string }>();
  if (typeof account !== 'string' || account === '') return c.json({ error: 'account required' }, 400);
  const limiter = new Limiter({
    policy: { algorithm: 'sliding-log', limit: 5, window: '15m' },
    store: new DurableObjectStore({ namespace: c.env.SLUICE, shards: 64 }),
  });
  const d = await limiter.limit(`login:${account}`);
  if (!d.allowed)
    return c.json({ error: 'too many attempts' }, 429, { 'Retry-After': String(Math.ceil(d.retryAfterMs / 1000)) });
  return c.json({ ok: true, remaining: d.remaining });
});

export default app;
