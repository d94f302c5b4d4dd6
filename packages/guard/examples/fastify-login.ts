// A Fastify login route protected end to end by the guard. Run: npx tsx examples/fastify-login.ts
import Fastify, { type FastifyInstance } from 'fastify';
import { MemoryStore } from 'sluice';
import { Guard, turnstile } from '@sluice/guard';
import {
  DEVICE_COOKIE_OPTIONS,
  deviceCookie,
  handleLogin,
  hashPassword,
  newDeviceId,
  type LoginDeps,
} from './login-flow.js';

export function createFastifyApp(deps: LoginDeps): FastifyInstance {
  // Behind a proxy, set trustProxy to exactly your proxies so request.ip is the client.
  const app = Fastify({ trustProxy: false, bodyLimit: 4096 });
  app.post('/login', async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const device = deviceCookie(request.headers.cookie);
    const r = await handleLogin(deps, {
      account: body.account,
      password: body.password,
      ip: request.ip,
      device,
      captchaToken: body.captchaToken,
      otp: body.otp,
    });
    if (r.status === 200 && device === undefined)
      reply.header('set-cookie', `device=${newDeviceId()}; ${DEVICE_COOKIE_OPTIONS}`);
    return reply.code(r.status).headers(r.headers).send(r.body);
  });
  return app;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const users = new Map([
    ['alice@example.com', { hash: await hashPassword('correct horse battery staple'), otp: '123456' }],
  ]);
  const guard = new Guard({ secret: process.env.GUARD_SECRET, store: new MemoryStore(), challenge: 'captcha' });
  const captcha = turnstile({ secret: process.env.TURNSTILE_SECRET ?? '1x0000000000000000000000000000000AA' });
  const app = createFastifyApp({ guard, users: { find: (a) => users.get(a) }, captcha });
  await app.listen({ port: 3001, host: '127.0.0.1' });
  console.log('POST http://127.0.0.1:3001/login {"account","password"}');
}
