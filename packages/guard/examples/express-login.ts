// An Express login route protected end to end by the guard. Run: npx tsx examples/express-login.ts
import express from 'express';
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

export function createExpressApp(deps: LoginDeps): express.Express {
  const app = express();
  // Behind a proxy, set 'trust proxy' to exactly your proxies so req.ip is the client, never a forged hop.
  app.set('trust proxy', false);
  app.post('/login', express.json({ limit: '4kb' }), async (req, res, next) => {
    try {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const device = deviceCookie(req.headers.cookie);
      const r = await handleLogin(deps, {
        account: body.account,
        password: body.password,
        ip: req.ip ?? req.socket.remoteAddress ?? '',
        device,
        captchaToken: body.captchaToken,
        otp: body.otp,
      });
      if (r.status === 200 && device === undefined)
        res.setHeader('set-cookie', `device=${newDeviceId()}; ${DEVICE_COOKIE_OPTIONS}`);
      res.status(r.status).set(r.headers).json(r.body);
    } catch (error) {
      next(error);
    }
  });
  return app;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const users = new Map([
    ['alice@example.com', { hash: await hashPassword('correct horse battery staple'), otp: '123456' }],
  ]);
  const guard = new Guard({ secret: process.env.GUARD_SECRET, store: new MemoryStore(), challenge: 'captcha' });
  const captcha = turnstile({ secret: process.env.TURNSTILE_SECRET ?? '1x0000000000000000000000000000000AA' });
  const app = createExpressApp({ guard, users: { find: (a) => users.get(a) }, captcha });
  app.listen(3000, '127.0.0.1', () => console.log('POST http://127.0.0.1:3000/login {"account","password"}'));
}
