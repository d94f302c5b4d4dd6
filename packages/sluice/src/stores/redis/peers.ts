/**
 * The connections of a RedisStore with `regions` to its peer regions' Redis servers: one per region,
 * made on first use, each with the region's own timeout and its outages told once each through the
 * store's reporting (the 'regions' strategy, src/distributed/regions/, owns what is sent).
 */
import type { PeerRegion } from '../script-runner.js';
import { connectionStats, RedisConnection } from './connection.js';
import type { HealthReport } from './health.js';
import { fileScript } from './scripts.js';

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
        maxInFlight: 64,
      });
      this.connections.set(peer.name, c);
    }
    return c;
  }
}
