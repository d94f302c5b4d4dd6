// sluice/nestjs on real Nest applications, on @nestjs/platform-express and @nestjs/platform-fastify: the
// shared adapter suite through RateLimitModule's global guard, then the decorators (rules per controller and
// route, skip, a key from the request, the decision as a parameter), @UseGuards without the global guard, and
// @nestjs/throttler's own guard on SluiceThrottlerStorage. Decorators are applied as functions, as the
// compiled form of `@Controller()` is: the test needs no decorator support from its compiler.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Controller,
  Get,
  HttpCode,
  Module,
  Post,
  Req,
  UseGuards,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { createRequire } from 'node:module';
import { manualClock, testAdapter, type Gate, type Running } from '../../../test/contracts/http-adapter.js';
import {
  RateLimit,
  RateLimitDecision,
  RateLimitGuard,
  RateLimitModule,
  SkipRateLimit,
  SluiceThrottlerStorage,
  type NestRateLimitOptions,
  type RateLimitInfo,
} from './index.js';

type Platform = 'express' | 'fastify';
type Decorate = (target: object, key: string, descriptor: PropertyDescriptor) => unknown;

/** Applies method decorators to `cls.prototype[name]`, as TypeScript's emit does. */
function route(cls: Type, name: string, ...decorators: Decorate[]): void {
  const proto = cls.prototype as Record<string, unknown>;
  for (const d of decorators.reverse()) {
    const descriptor = Object.getOwnPropertyDescriptor(proto, name)!;
    const out = d(proto, name, descriptor) as PropertyDescriptor | undefined;
    if (out !== undefined) Object.defineProperty(proto, name, out);
  }
}
const param = (cls: Type, name: string, index: number, d: ParameterDecorator) =>
  d(cls.prototype as object, name, index);

/** Nest's packages as this file imports them, or as `require` loads them (see the throttler test). */
interface Nest {
  NestFactory: typeof NestFactory;
  ExpressAdapter: typeof ExpressAdapter;
  FastifyAdapter: typeof FastifyAdapter;
}
const imported: Nest = { NestFactory, ExpressAdapter, FastifyAdapter };

async function start(platform: Platform, module: Type, host = '127.0.0.1', nest: Nest = imported): Promise<Running> {
  const adapter = platform === 'express' ? new nest.ExpressAdapter() : new nest.FastifyAdapter();
  const app: INestApplication = await nest.NestFactory.create(module, adapter, { logger: false, abortOnError: false });
  await app.listen(0, host);
  const server = app.getHttpServer() as import('node:http').Server;
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await app.close();
    },
  };
}

/** The suite's routes (test/contracts/http-adapter.ts), as one controller. */
function suiteController(gate: Gate): Type {
  class AppController {
    root() {
      return 'ok';
    }
    login() {
      return 'ok';
    }
    graphql() {
      return 'ok';
    }
    async slow() {
      await gate.opened;
      return 'ok';
    }
    info(req: { rateLimit?: RateLimitInfo }) {
      const i = req.rateLimit;
      return {
        key: i?.key,
        route: i?.route ?? null,
        cost: i?.cost,
        remaining: i?.decision.remaining,
        limited: i?.limited,
      };
    }
    missing() {
      return 'nope';
    }
    boom() {
      throw new Error('boom');
    }
  }
  Controller()(AppController);
  route(AppController, 'root', Get('/'));
  route(AppController, 'login', Post('login'), HttpCode(200));
  route(AppController, 'graphql', Post('graphql'), HttpCode(200));
  route(AppController, 'slow', Get('slow'));
  route(AppController, 'info', Get('info'));
  param(AppController, 'info', 0, Req());
  route(AppController, 'missing', Get('missing'), HttpCode(404));
  route(AppController, 'boom', Get('boom'));
  return AppController;
}

function appModule(imports: unknown[], controllers: Type[], providers: unknown[] = []): Type {
  class AppModule {}
  Module({ imports: imports as never, controllers, providers: providers as never })(AppModule);
  return AppModule;
}

for (const platform of ['express', 'fastify'] as const) {
  testAdapter({
    name: `nestjs (${platform})`,
    serve: (options, gate, host) =>
      start(
        platform,
        appModule([RateLimitModule.forRoot(options as NestRateLimitOptions)], [suiteController(gate)]),
        host,
      ),
    body: ((req: { body: unknown }) => req.body) as never,
    responseStatus: ((res: { statusCode: number }) => res.statusCode) as never,
  });

  test(`nestjs (${platform}): rules per controller and per route, skip, a key from the request, the decision as a parameter`, async () => {
    class CatsController {
      list() {
        return 'cats';
      }
      expensive() {
        return 'costly';
      }
      create() {
        return 'created';
      }
      health() {
        return 'up';
      }
      mine(d: RateLimitInfo | undefined) {
        return { route: d?.route, key: d?.key, remaining: d?.decision.remaining };
      }
    }
    Controller('cats')(CatsController);
    RateLimit({ policy: { name: 'cats', algorithm: 'gcra', limit: 10, window: '1m' } })(CatsController);
    route(CatsController, 'list', Get());
    route(CatsController, 'expensive', Get('expensive'), RateLimit({ cost: 4 }));
    route(
      CatsController,
      'create',
      Post(),
      RateLimit({ policy: { name: 'create', algorithm: 'sliding-log', limit: 1, window: '1m' } }),
    );
    route(CatsController, 'health', Get('health'), SkipRateLimit());
    route(
      CatsController,
      'mine',
      Get('mine'),
      RateLimit({ key: (req: { headers: Record<string, string | undefined> }) => req.headers['x-user'] }),
    );
    param(CatsController, 'mine', 0, RateLimitDecision());
    class DogsController {
      list() {
        return 'dogs';
      }
    }
    Controller('dogs')(DogsController);
    route(DogsController, 'list', Get());
    const c = manualClock();
    const module = appModule(
      [
        RateLimitModule.forRoot({
          policy: { name: 'all', algorithm: 'gcra', limit: 3, window: '1m' },
          clock: c.clock,
          headers: 'draft-7',
        }),
      ],
      [CatsController, DogsController],
    );
    const r = await start(platform, module);
    try {
      const get = async (path: string, init?: RequestInit) => {
        const res = await fetch(`${r.url}${path}`, init);
        return {
          status: res.status,
          body: await res.text(),
          ratelimit: res.headers.get('ratelimit'),
          type: res.headers.get('content-type'),
        };
      };
      // The controller's rule: its own state, shared by its routes; a route's cost counts against it.
      const cats = await get('/cats');
      assert.deepEqual([cats.status, cats.body, cats.ratelimit], [200, 'cats', 'limit=10, remaining=9, reset=6']);
      const costly = await get('/cats/expensive');
      assert.equal(costly.ratelimit, 'limit=10, remaining=5, reset=30');
      // A route with its own policy: its own state.
      assert.equal((await get('/cats', { method: 'POST' })).status, 201);
      const refused = await get('/cats', { method: 'POST' });
      assert.equal(refused.status, 429);
      assert.equal(refused.type, 'application/problem+json');
      assert.equal((JSON.parse(refused.body) as { 'violated-policies': string[] })['violated-policies'][0], 'create');
      // Skipped: no headers, never counted.
      for (let i = 0; i < 12; i++) assert.equal((await get('/cats/health')).ratelimit, null);
      // A key from the request, on the controller's policy; the decision injected as a parameter.
      const mine = JSON.parse((await get('/cats/mine', { headers: { 'x-user': 'alice' } })).body) as Record<
        string,
        unknown
      >;
      assert.deepEqual(
        mine,
        { route: 'CatsController', key: 'CatsController:alice', remaining: 9 },
        "alice has her own key on the controller's policy",
      );
      // An undecorated controller: the module's policy.
      const dogs = [await get('/dogs'), await get('/dogs'), await get('/dogs'), await get('/dogs')];
      assert.deepEqual(
        dogs.map((d) => d.status),
        [200, 200, 200, 429],
      );
      assert.equal(dogs[0]!.ratelimit, 'limit=3, remaining=2, reset=20');
    } finally {
      await r.close();
    }
  });

  test(`nestjs (${platform}): global: false limits only where @UseGuards(RateLimitGuard) is`, async () => {
    class OpenController {
      free() {
        return 'free';
      }
      guarded() {
        return 'guarded';
      }
    }
    Controller()(OpenController);
    route(OpenController, 'free', Get('free'));
    route(OpenController, 'guarded', Get('guarded'), UseGuards(RateLimitGuard));
    const module = appModule(
      [RateLimitModule.forRoot({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, global: false })],
      [OpenController],
    );
    const r = await start(platform, module);
    try {
      const s = async (p: string) => (await fetch(`${r.url}${p}`).then(async (x) => (await x.text(), x))).status;
      assert.deepEqual(
        [await s('/free'), await s('/free'), await s('/guarded'), await s('/guarded')],
        [200, 200, 200, 429],
      );
    } finally {
      await r.close();
    }
  });

  test(`nestjs (${platform}): forRootAsync takes its options from a factory`, async () => {
    class Root {
      root() {
        return 'ok';
      }
    }
    Controller()(Root);
    route(Root, 'root', Get());
    const module = appModule(
      [
        RateLimitModule.forRootAsync({
          useFactory: async () => ({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, status: 503 }),
        }),
      ],
      [Root],
    );
    const r = await start(platform, module);
    try {
      const s = async () => (await fetch(r.url).then(async (x) => (await x.text(), x))).status;
      assert.deepEqual([await s(), await s()], [200, 503]);
    } finally {
      await r.close();
    }
  });

  test(`nestjs (${platform}): @nestjs/throttler's guard and decorators on SluiceThrottlerStorage`, async () => {
    // @nestjs/throttler is CommonJS and requires @nestjs/core; under tsx a require of that ES module is
    // another instance than this file's import (plain Node shares one), so this app is built from require.
    const require = createRequire(import.meta.url);
    const common = require('@nestjs/common') as typeof import('@nestjs/common');
    const core = require('@nestjs/core') as typeof import('@nestjs/core');
    const { ThrottlerGuard, ThrottlerModule, Throttle } =
      require('@nestjs/throttler') as typeof import('@nestjs/throttler');
    const nest: Nest = {
      NestFactory: core.NestFactory,
      ExpressAdapter: (require('@nestjs/platform-express') as Nest).ExpressAdapter,
      FastifyAdapter: (require('@nestjs/platform-fastify') as Nest).FastifyAdapter,
    };
    class Throttled {
      root() {
        return 'ok';
      }
      strict() {
        return 'ok';
      }
    }
    common.Controller()(Throttled);
    route(Throttled, 'root', common.Get());
    route(Throttled, 'strict', common.Get('strict'), Throttle({ default: { limit: 1, ttl: 10_000 } }) as Decorate);
    const storage = new SluiceThrottlerStorage();
    class AppModule {}
    common.Module({
      imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 2 }], storage })],
      controllers: [Throttled],
      providers: [{ provide: core.APP_GUARD, useClass: ThrottlerGuard }],
    })(AppModule);
    const r = await start(platform, AppModule, '127.0.0.1', nest);
    try {
      const res = [];
      for (let i = 0; i < 3; i++) {
        const x = await fetch(r.url);
        await x.text();
        res.push([x.status, x.headers.get('x-ratelimit-remaining'), x.headers.get('retry-after')]);
      }
      assert.deepEqual(res, [
        [200, '1', null],
        [200, '0', null],
        [429, null, '60'],
      ]);
      // @Throttle's per-route limit and ttl reach the storage.
      const strict = [await fetch(`${r.url}/strict`), await fetch(`${r.url}/strict`)];
      assert.deepEqual(
        strict.map((x) => [x.status, x.headers.get('retry-after')]),
        [
          [200, null],
          [429, '10'],
        ],
      );
    } finally {
      await r.close();
    }
  });
}

test('nestjs: a bad rule fails when the decorator runs, naming the field', () => {
  assert.throws(() => RateLimit({ polciy: {} } as never), /@RateLimit\(\): unknown field 'polciy'/);
  assert.throws(
    () => RateLimit({ policy: { algorithm: 'gcra', limit: 0, window: '1m' } }),
    /'limit' must be a positive integer, got 0/,
  );
  assert.throws(
    () => RateLimitModule.forRoot({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, hook: 'x' } as never),
    /unknown RateLimitModule option 'hook'/,
  );
});
