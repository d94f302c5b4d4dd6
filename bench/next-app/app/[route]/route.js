// One route handler per limiter, on the Node runtime, all on one hot key (wrk is one client), with limits
// no run reaches, so every request is admitted. REDIS_URL is the benchmark's own redis-server.
import { createHash } from 'node:crypto';
import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from 'ioredis';
import { withRateLimit } from 'sluice/next';
import { RedisStore } from 'sluice/redis';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const io = new Redis(process.env.REDIS_URL);
const store = new RedisStore({ client: io, prefix: 'bench', timeoutMs: 1000 });
// @upstash/ratelimit talks to Upstash's REST API through @upstash/redis; these are the two calls it makes
// (EVALSHA, and EVAL on NOSCRIPT), sent to the local Redis through ioredis instead. Its scripts open with
// `#!lua flags=allow-key-locking`, a flag Redis 7.0 refuses, so the shim sends them without that line and
// maps their SHA1 to the SHA1 of what it sent: every call after the first is one EVALSHA, as on Upstash.
const shas = new Map();
const sha1 = (s) => createHash('sha1').update(s).digest('hex');
const shim = {
  evalsha: (sha, keys, args) => io.evalsha(shas.get(sha) ?? sha, keys.length, ...keys, ...args),
  eval: (script, keys, args) => {
    const sent = script.replace(/^#!lua[^\n]*\n/, '');
    shas.set(sha1(script), sha1(sent));
    return io.eval(sent, keys.length, ...keys, ...args);
  },
};
const LIMIT = 100_000_000; // per hour: beyond any run, within what GCRA resolves (64 per ms)
const key = () => 'bench';
const ok = () => new Response('ok');
const sluice = (policy, extra = {}) => withRateLimit(ok, { policy: { name: 'p', limit: LIMIT, window: '1h', ...policy }, key, ...extra });
const upstash = (limiter) => {
  const r = new Ratelimit({ redis: shim, limiter, prefix: 'upstash', analytics: false });
  return async () => {
    const { success } = await r.limit('bench');
    return success ? ok() : new Response('limited', { status: 429 });
  };
};

const ROUTES = {
  bare: async () => ok(),
  'sluice-memory': sluice({ algorithm: 'gcra' }),
  'sluice-memory-none': sluice({ algorithm: 'gcra' }, { headers: 'none' }),
  'sluice-fixed': sluice({ algorithm: 'fixed-window' }, { store }),
  'sluice-sliding': sluice({ algorithm: 'sliding-window' }, { store }),
  'sluice-token': sluice({ algorithm: 'token-bucket' }, { store }),
  'upstash-fixed': upstash(Ratelimit.fixedWindow(LIMIT, '1 h')),
  'upstash-sliding': upstash(Ratelimit.slidingWindow(LIMIT, '1 h')),
  'upstash-token': upstash(Ratelimit.tokenBucket(LIMIT, '1 h', LIMIT)),
};

export async function GET(request, context) {
  const { route } = await context.params;
  const handle = ROUTES[route];
  return handle === undefined ? new Response('no such limiter', { status: 404 }) : handle(request, context);
}
