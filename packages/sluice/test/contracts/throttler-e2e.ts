// @nestjs/throttler's own e2e suite (test/controller.e2e-spec.ts of nestjs/throttler, with its
// test/app controllers) re-stated on SluiceThrottlerStorage: the same controllers, decorators and
// assertions, on Express and Fastify; its `await setTimeout(blockDuration)` is a manual clock moved by
// the block, so the suite takes milliseconds. Issue 49 finding 4: the LimitController and DefaultController
// cases failed after the block (429 where the throttler's storage counts afresh).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { SluiceThrottlerStorage } from '../../src/compat/nestjs-throttler.js';
import type { Store } from '../../src/stores/store.js';
import { manualClock } from './http-adapter.js';

// @nestjs/throttler is CommonJS and requires @nestjs/core: the app is built from require so that both see
// one instance of Nest (see the throttler test in src/middleware/nestjs/index.test.ts).
const require = createRequire(import.meta.url);
const common = require('@nestjs/common') as typeof import('@nestjs/common');
const core = require('@nestjs/core') as typeof import('@nestjs/core');
const { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule, seconds } =
  require('@nestjs/throttler') as typeof import('@nestjs/throttler');
const adapters = {
  Express: () =>
    new (require('@nestjs/platform-express') as typeof import('@nestjs/platform-express')).ExpressAdapter(),
  Fastify: () =>
    new (require('@nestjs/platform-fastify') as typeof import('@nestjs/platform-fastify')).FastifyAdapter(),
};

type Decorate = (target: object, key: string, descriptor: PropertyDescriptor) => unknown;
const onClass = (d: unknown, cls: Function) => (d as (target: Function) => void)(cls);
/** Applies method decorators as TypeScript's emit does (this file is not compiled with decorators). */
function method(cls: new () => object, name: string, ...decorators: Decorate[]): void {
  const proto = cls.prototype as Record<string, unknown>;
  for (const d of decorators.reverse()) {
    const out = d(proto, name, Object.getOwnPropertyDescriptor(proto, name)!) as PropertyDescriptor | undefined;
    if (out !== undefined) Object.defineProperty(proto, name, out);
  }
}

const success = () => ({ success: true });
const ignored = () => ({ ignored: true });

/** test/app/controllers: AppController, LimitController, DefaultController, and the spec's own ThrottleTestController. */
function controllers(): Array<new () => object> {
  class AppController {
    test() {
      return success();
    }
    ignored() {
      return ignored();
    }
    ignoreUserAgents() {
      return ignored();
    }
  }
  common.Controller()(AppController);
  onClass(Throttle({ default: { limit: 2, ttl: seconds(10) } }), AppController);
  method(AppController, 'test', common.Get());
  method(AppController, 'ignored', common.Get('ignored'), SkipThrottle() as unknown as Decorate);
  method(AppController, 'ignoreUserAgents', common.Get('ignore-user-agents'));

  class LimitController {
    getThrottled() {
      return success();
    }
    getHigher() {
      return success();
    }
  }
  common.Controller('limit')(LimitController);
  onClass(Throttle({ default: { limit: 2, ttl: seconds(10), blockDuration: seconds(5) } }), LimitController);
  method(LimitController, 'getThrottled', common.Get());
  method(
    LimitController,
    'getHigher',
    common.Get('higher'),
    Throttle({ default: { limit: 5, ttl: seconds(10), blockDuration: seconds(15) } }) as Decorate,
  );

  class DefaultController {
    getDefault() {
      return success();
    }
  }
  common.Controller('default')(DefaultController);
  method(DefaultController, 'getDefault', common.Get());

  class ThrottleTestController {
    testThrottle() {
      return { code: 'THROTTLE_TEST' };
    }
  }
  common.Controller('test/throttle')(ThrottleTestController);
  method(
    ThrottleTestController,
    'testThrottle',
    Throttle({ default: { limit: 1, ttl: 1000, blockDuration: 1000 } }) as Decorate,
    common.Post(),
  );
  return [AppController, LimitController, DefaultController, ThrottleTestController];
}

interface Reply {
  data: unknown;
  headers: Record<string, string>;
  status: number;
}

async function http(url: string, method = 'GET', headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { method, headers });
  return { data: JSON.parse(await res.text()), headers: Object.fromEntries(res.headers), status: res.status };
}

/** `make` returns a sluice store; a RedisStore under test takes `clock: 'client'`, so the manual clock rules. */
export function throttlerE2eSuite(name: string, make: () => Store): void {
  for (const [adapterName, adapter] of Object.entries(adapters)) {
    test(`${name}: @nestjs/throttler's controller e2e spec (${adapterName}) on SluiceThrottlerStorage, blocks waited out on a manual clock`, async () => {
      const c = manualClock();
      const storage = new SluiceThrottlerStorage({
        store: make(),
        clock: c.clock,
        prefix: `e2e-${adapterName}-${c.now}-${Math.random().toString(36).slice(2)}`,
      });
      class ControllerModule {}
      common.Module({
        imports: [
          ThrottlerModule.forRoot({
            throttlers: [
              { limit: 5, ttl: seconds(60), blockDuration: seconds(20), ignoreUserAgents: [/throttler-test/g] },
            ],
            storage,
          }),
        ],
        controllers: controllers(),
        providers: [{ provide: core.APP_GUARD, useClass: ThrottlerGuard }],
      })(ControllerModule);
      const app = await core.NestFactory.create(ControllerModule, adapter(), { logger: false, abortOnError: false });
      await app.listen(0, '127.0.0.1');
      const { port } = (app.getHttpServer() as import('node:http').Server).address() as { port: number };
      const appUrl = `http://127.0.0.1:${port}`;
      const limited = { 'x-ratelimit-limit': /^\d+$/, 'x-ratelimit-remaining': /^\d+$/, 'x-ratelimit-reset': /^\d+$/ };
      const hasHeaders = (h: Record<string, string>, expected: Record<string, string | RegExp>) =>
        Object.entries(expected).every(([k, v]) =>
          typeof v === 'string' ? h[k] === v : h[k] !== undefined && v.test(h[k]!),
        );
      try {
        // AppController
        let response = await http(`${appUrl}/ignored`);
        assert.deepEqual(response.data, { ignored: true });
        assert.equal(
          hasHeaders(response.headers, { ...limited, 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1' }),
          false,
        );
        response = await http(`${appUrl}/ignore-user-agents`, 'GET', { 'user-agent': 'throttler-test/0.0.0' });
        assert.deepEqual(response.data, { ignored: true });
        assert.equal(
          hasHeaders(response.headers, { ...limited, 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1' }),
          false,
        );
        response = await http(`${appUrl}/`);
        assert.deepEqual(response.data, { success: true });
        assert.ok(
          hasHeaders(response.headers, { ...limited, 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1' }),
          JSON.stringify(response.headers),
        );

        // LimitController GET '' (limit 2, block 5 s) and GET /higher (limit 5, block 15 s); then
        // DefaultController GET /default (forRoot: limit 5, block 20 s): the same steps.
        for (const [url, limit, blockDuration] of [
          ['/limit', 2, 5000],
          ['/limit/higher', 5, 15000],
          ['/default', 5, 20000],
        ] as const) {
          for (let i = 0; i < limit; i++) {
            const ok = await http(appUrl + url);
            assert.deepEqual(ok.data, { success: true }, `${url} hit ${i + 1}`);
            assert.ok(
              hasHeaders(ok.headers, {
                ...limited,
                'x-ratelimit-limit': String(limit),
                'x-ratelimit-remaining': String(limit - (i + 1)),
              }),
              `${url} hit ${i + 1}: ${JSON.stringify(ok.headers)}`,
            );
          }
          const errRes = await http(appUrl + url);
          assert.equal((errRes.data as { statusCode: number }).statusCode, 429);
          assert.match((errRes.data as { message: string }).message, /ThrottlerException/);
          assert.match(errRes.headers['retry-after'] ?? '', /^\d+$/);
          assert.equal(errRes.status, 429);
          c.now += blockDuration; // await setTimeout(blockDuration)
          const after = await http(appUrl + url);
          assert.deepEqual(after.data, { success: true }, `${url}: the block is over`);
          assert.ok(
            hasHeaders(after.headers, {
              ...limited,
              'x-ratelimit-limit': String(limit),
              'x-ratelimit-remaining': String(limit - 1),
            }),
            `${url} after the block: ${JSON.stringify(after.headers)}`,
          );
        }

        // ThrottlerTestController POST /test/throttle (limit 1, ttl 1 s, block 1 s)
        const makeRequest = () => http(`${appUrl}/test/throttle`, 'POST');
        assert.equal((await makeRequest()).status, 201);
        c.now += 1000;
        assert.equal((await makeRequest()).status, 201);
        assert.equal((await makeRequest()).status, 429);
        assert.equal((await makeRequest()).status, 429);
      } finally {
        (app.getHttpServer() as import('node:http').Server).closeAllConnections();
        await app.close();
      }
    });
  }
}
