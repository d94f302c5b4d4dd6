/**
 * RateLimitModule: `RateLimitModule.forRoot(options)` (or `forRootAsync` for options from a config
 * service) makes the guard global by default and registers the filter that sends refusals.
 */
import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata, type Provider } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { RateLimitExceptionFilter } from './exception.js';
import { RATE_LIMIT_CORE, RateLimitCore, RateLimitGuard } from './guard.js';
import type { NestRateLimitOptions } from './options.js';

export interface RateLimitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Builds the options, e.g. from a ConfigService or with a Redis client another provider made. */
  useFactory: (...args: never[]) => NestRateLimitOptions | Promise<NestRateLimitOptions>;
  inject?: FactoryProvider['inject'];
  /** Guard every route (APP_GUARD). Default true. Given here, not by the factory: Nest wires guards before factories run. */
  global?: boolean;
}

export class RateLimitModule {
  /** The module with these options; its guard covers every route unless `global: false`. */
  static forRoot(options: NestRateLimitOptions): DynamicModule {
    // Built now, so that a bad option fails at start-up with the field named.
    const core = new RateLimitCore(options);
    return RateLimitModule.with({ provide: RATE_LIMIT_CORE, useValue: core }, options.global ?? true, []);
  }

  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    const factory: FactoryProvider = {
      provide: RATE_LIMIT_CORE,
      useFactory: async (...args: never[]) => new RateLimitCore(await options.useFactory(...args)),
      inject: options.inject ?? [],
    };
    return RateLimitModule.with(factory, options.global ?? true, options.imports ?? []);
  }

  private static with(core: Provider, global: boolean, imports: NonNullable<ModuleMetadata['imports']>): DynamicModule {
    const providers: Provider[] = [core, RateLimitGuard, { provide: APP_FILTER, useClass: RateLimitExceptionFilter }];
    if (global) providers.push({ provide: APP_GUARD, useExisting: RateLimitGuard });
    return { module: RateLimitModule, global: true, imports, providers, exports: [RATE_LIMIT_CORE, RateLimitGuard] };
  }
}
Module({})(RateLimitModule);
