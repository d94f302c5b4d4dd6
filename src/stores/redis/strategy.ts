/**
 * RedisStore's side of the distributed strategies (src/distributed/): a ScriptRunner over the store's
 * client, with the store's prefix, timeout, counters and failure policy, for the lease and local-sync scripts.
 */
import { SluiceError } from '../../core/index.js';
import type { ScriptRunner } from '../../distributed/runner.js';
import type { TableSpec } from '../store.js';
import { Fallback } from './failure.js';
import { escapeId, keyOf } from './keys.js';
import { fileScript } from './scripts.js';
import type { StoreContext } from './table.js';

export function scriptRunner(ctx: StoreContext, spec: TableSpec): ScriptRunner {
  const fallback = new Fallback(ctx.onError, spec);
  const { adapter, stats } = ctx;
  return {
    clientClock: ctx.clientClock,
    keyFor: (key, suffix) => keyOf(ctx.prefix, escapeId(key), suffix),
    fallback: (key, cost) => {
      stats.fallbacks++;
      return fallback.decide(key, cost, undefined);
    },
    run(name, keys, args) {
      const s = fileScript(name);
      if (!adapter.ready()) {
        stats.refused++;
        return Promise.reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', 'RedisStore: the Redis client is not connected'));
      }
      stats.calls++;
      stats.operations++;
      const sent = (async () => {
        try {
          return await adapter.evalsha(s.sha, keys, args);
        } catch (err) {
          if (!String((err as Error)?.message ?? err).startsWith('NOSCRIPT')) throw err;
          stats.reloads++;
          return adapter.eval(s.source, keys, args);
        }
      })();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          stats.timeouts++;
          reject(new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `RedisStore: no answer within 'timeoutMs' ${ctx.timeoutMs}`));
        }, ctx.timeoutMs);
      });
      return Promise.race([sent, timeout]).then(
        (r) => (clearTimeout(timer), r),
        (err: unknown) => {
          clearTimeout(timer);
          if (!(err instanceof SluiceError)) stats.errors++;
          throw err;
        },
      );
    },
  };
}
