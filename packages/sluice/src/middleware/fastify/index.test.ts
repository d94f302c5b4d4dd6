// sluice/fastify on a real Fastify 5 server: the shared adapter suite, plus the plugin's own options.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { testAdapter, type Gate, type Running } from '../../../test/contracts/http-adapter.js';
import { rateLimit, type FastifyRateLimitOptions } from './index.js';

async function serve(options: FastifyRateLimitOptions, gate: Gate, host = '127.0.0.1'): Promise<Running> {
  const app = Fastify({ forceCloseConnections: true });
  await app.register(rateLimit, options);
  app.get('/', async () => 'ok');
  app.post('/login', async () => 'ok');
  app.post('/graphql', async () => 'ok');
  app.get('/slow', async () => {
    await gate.opened;
    return 'ok';
  });
  app.get('/info', async (request) => {
    const i = request.rateLimit;
    return {
      key: i?.key,
      route: i?.route ?? null,
      cost: i?.cost,
      remaining: i?.decision.remaining,
      limited: i?.limited,
    };
  });
  app.get('/boom', async () => {
    throw new Error('boom');
  });
  await app.listen({ port: 0, host });
  const port = (app.server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

testAdapter({
  name: 'fastify',
  serve: (options, gate, host) => serve(options as FastifyRateLimitOptions, gate, host),
  body: ((req: FastifyRequest) => req.body) as never,
  bodyOptions: { hook: 'preHandler' },
  responseStatus: ((reply: FastifyReply) => reply.statusCode) as never,
});

test('fastify: registered in an encapsulated scope, it limits that scope only', async () => {
  const app = Fastify();
  await app.register(async (scope) => {
    await scope.register(rateLimit, { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, headers: 'draft-6' });
    scope.get('/limited', async () => 'ok');
  });
  app.get('/free', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  try {
    assert.equal((await fetch(`${url}/limited`)).status, 200);
    const refused = await fetch(`${url}/limited`);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('ratelimit-remaining'), '0');
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${url}/free`)).status, 200);
  } finally {
    await app.close();
  }
});

test('fastify: bad options fail registration with a SluiceError', async () => {
  const app = Fastify();
  await assert.rejects(
    async () => {
      await app.register(rateLimit, { policy: { algorithm: 'gcra', limit: 1, window: '1m' }, hook: 'onSend' as never });
      await app.ready();
    },
    { code: 'ERR_SLUICE_INVALID_OPTION', message: /'hook' must be 'onRequest' or 'preHandler', got "onSend"/ },
  );
  await app.close();
});
