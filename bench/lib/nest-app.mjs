// The NestJS app both framework benches run: one GET /ok controller on @nestjs/platform-express, bare or
// behind a limiter: 'sluice' (sluice/nestjs), 'throttler' (@nestjs/throttler, its in-memory storage) or
// 'throttler-sluice' (the throttler on SluiceThrottlerStorage). Decorators applied as plain functions, so
// no build step; `limit` a minute per `client(req)`. Loads the built package (npm run build first).
import 'reflect-metadata';

export async function nestApp(kind, { limit, client }) {
  const common = await import('@nestjs/common');
  const { NestFactory, APP_GUARD } = await import('@nestjs/core');
  const { ExpressAdapter } = await import('@nestjs/platform-express');
  class OkController {
    ok() {
      return 'ok';
    }
  }
  common.Controller()(OkController);
  const d = Object.getOwnPropertyDescriptor(OkController.prototype, 'ok');
  common.Get('ok')(OkController.prototype, 'ok', d);
  common.Header('Content-Type', 'text/plain')(OkController.prototype, 'ok', d);
  const imports = [];
  const providers = [];
  if (kind === 'sluice') {
    const { RateLimitModule } = await import('../../packages/sluice/dist/middleware/nestjs/index.js');
    imports.push(
      RateLimitModule.forRoot({ policy: { algorithm: 'gcra', limit, window: '1m' }, key: client, headers: 'draft-7' }),
    );
  } else if (kind === 'throttler' || kind === 'throttler-sluice') {
    const { ThrottlerModule, ThrottlerGuard } = await import('@nestjs/throttler');
    const storage =
      kind === 'throttler-sluice'
        ? new (await import('../../packages/sluice/dist/compat/nestjs-throttler.js')).SluiceThrottlerStorage()
        : undefined;
    imports.push(
      ThrottlerModule.forRoot({
        throttlers: [{ ttl: 60_000, limit }],
        getTracker: client,
        ...(storage ? { storage } : {}),
      }),
    );
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
  } else if (kind !== 'bare') {
    throw new Error(`unknown NestJS variant ${JSON.stringify(kind)}`);
  }
  class AppModule {}
  common.Module({ imports, controllers: [OkController], providers })(AppModule);
  const app = await NestFactory.create(AppModule, new ExpressAdapter(), { logger: false });
  await app.init();
  return app;
}
