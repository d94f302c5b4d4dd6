/**
 * The connections of a RedisStore with `regions` to its peer regions' Redis servers: one per region,
 * made on first use, each with the region's own timeout and its outages told once each through the
 * store's reporting (the 'regions' strategy, src/distributed/regions/, owns what is sent).
 */
import type { PeerRegion } from '../script-runner.js';
import { adapt } from './adapter.js';
import { connectionStats, RedisConnection } from './connection.js';
import type { HealthReport } from './health.js';
import { fileScript } from './scripts.js';

/**
 * Most calls awaiting a peer's answer at once, every limiter of the store together: 64 pushes; on a
 * Cluster, a push is a call per hash slot of its up to 1,000 keys (src/distributed/regions/table.ts).
 */
const MAX_IN_FLIGHT = 64;
const CLUSTER_MAX_IN_FLIGHT = 64 * 1000;

export class PeerConnections {
  private readonly connections = new Map<string, RedisConnection>();

  constructor(private readonly report: Omit<HealthReport, 'meanwhile'>) {}

  run(peer: PeerRegion, name: string, keys: string[], args: string[]): Promise<unknown> {
    return this.connection(peer).run(fileScript(name), keys, args);
  }

  /** The peer's connection, made on first use. */
  connection(peer: PeerRegion): RedisConnection {
    let c = this.connections.get(peer.name);
    if (c === undefined) {
      const meanwhile = `region '${peer.name}' hears nothing from this one and this one nothing from it; past 'partitionAfterMs' each counts the other as spending its whole share`;
      c = new RedisConnection({
        client: peer.client,
        timeoutMs: peer.timeoutMs,
        owner: `RedisStore region '${peer.name}'`,
        stats: connectionStats(),
        report: { ...this.report, meanwhile },
        // A push to a Cluster goes as a call per hash slot (src/distributed/regions/table.ts): with keys
        // of many slots, a push of 1,000 keys is up to 1,000 calls.
        maxInFlight: adapt(peer.client, `RedisStore region '${peer.name}'`).cluster
          ? CLUSTER_MAX_IN_FLIGHT
          : MAX_IN_FLIGHT,
      });
      this.connections.set(peer.name, c);
    }
    return c;
  }
}
