/**
 * RedisStore's side of the distributed strategies (src/distributed/): a ScriptRunner over the store's
 * connection, with the store's prefix, counters and failure policy, for the lease and local-sync scripts.
 */
import type { ScriptRunner } from '../script-runner.js';
import type { TableSpec } from '../store.js';
import { Fallback } from './failure.js';
import { escapeId, keyOf, slotOf } from './keys.js';
import type { PeerConnections } from './peers.js';
import { fileScript } from './scripts.js';
import type { StoreContext } from './table.js';

export function scriptRunner(ctx: StoreContext, spec: TableSpec, peers?: PeerConnections): ScriptRunner {
  const fallback = new Fallback(ctx.onError, spec);
  const { connection, stats } = ctx;
  return {
    clientClock: ctx.clientClock,
    keyFor: (key, suffix) => keyOf(ctx.prefix, escapeId(key), suffix),
    slotOf: (key) => slotOf(escapeId(key)),
    fallback: (key, cost) => {
      stats.fallbacks++;
      return fallback.decide(key, cost, undefined);
    },
    run(name, keys, args) {
      return connection.run(fileScript(name), keys, args);
    },
    isCluster: (peer) => (peer === undefined ? connection.cluster : (peers?.connection(peer).cluster ?? false)),
    ...(peers === undefined ? {} : { runOn: (peer, name, keys, args) => peers.run(peer, name, keys, args) }),
  };
}
