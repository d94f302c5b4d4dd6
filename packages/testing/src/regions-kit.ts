// Three (or more) regions on this machine for the 'regions' strategy's tests and bench: a redis-server
// per region on its own port, and a DelayProxy for every directed link between regions, so that a
// region's store reaches its home directly and its peers only through the delayed, cuttable links. A
// region named in `clusters` has a Redis Cluster (3 masters, 3 replicas) for its home: its peers reach
// each of its nodes through a link of its own, their Cluster clients told so by a natMap.
import { once } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import type { Limiter } from '../../sluice/src/limiter.js';
import { RedisStore } from '../../sluice/src/stores/redis/index.js';
import type { RegionsOptions } from '../../sluice/src/distributed/regions/options.js';
import { freePort, OwnCluster, OwnRedis } from './harness.js';
import { DelayProxy, type Cut } from './delay-proxy.js';

export class World {
  /** Each region's home server; for a Cluster region, its Cluster's first node (the Cluster: `clusterOf`). */
  readonly servers: OwnRedis[] = [];
  private readonly clusterHomes = new Map<string, OwnCluster>();
  /**
   * `from>to` → the proxy region `from` reaches region `to`'s Redis through; for a Cluster region `to`,
   * `from>to>port`, one per node.
   */
  readonly links = new Map<string, DelayProxy>();
  private readonly clients: (Redis | Cluster)[] = [];

  constructor(
    readonly names: readonly string[],
    readonly delayMs: number,
    readonly clusters: readonly string[] = [],
  ) {}

  async start(): Promise<void> {
    for (const n of this.names) {
      if (this.clusters.includes(n)) {
        const c = new OwnCluster();
        await c.start();
        this.clusterHomes.set(n, c);
        this.servers.push(c.nodes[0]!);
      } else {
        const s = new OwnRedis(await freePort());
        await s.start();
        this.servers.push(s);
      }
    }
    for (const [i, from] of this.names.entries()) {
      for (const [j, to] of this.names.entries()) {
        if (i === j) continue;
        const c = this.clusterHomes.get(to);
        for (const port of c?.ports ?? [this.servers[j]!.port]) {
          const p = new DelayProxy(port, this.delayMs);
          await p.start();
          this.links.set(c !== undefined ? `${from}>${to}>${port}` : `${from}>${to}`, p);
        }
      }
    }
  }

  /** A client on region `name`'s home Redis (a Cluster client for a Cluster region), direct (the region's own, local link). */
  home(name: string): Redis | Cluster {
    const c = this.clusterHomes.get(name);
    return c !== undefined
      ? this.cluster(c.ports.map((port) => [port, port]))
      : this.client(this.servers[this.names.indexOf(name)]!.port);
  }

  /** Region `name`'s Cluster, if its home is one. */
  clusterOf(name: string): OwnCluster | undefined {
    return this.clusterHomes.get(name);
  }

  /**
   * Resolves once every Cluster client made so far and still opening has its slot map (a store's calls
   * wait 2 s at most for it); one closed or closing is not waited for.
   */
  async ready(): Promise<void> {
    await Promise.all(
      this.clients
        .filter((c): c is Cluster => c instanceof Cluster && ['wait', 'connecting', 'connect'].includes(c.status))
        .map((c) => once(c, 'ready')),
    );
  }

  /** A Cluster client reaching node `node` at `via` ([node port, port to connect to] pairs). */
  private cluster(via: [number, number][]): Cluster {
    const c = new Cluster(
      via.map(([, port]) => ({ host: '127.0.0.1', port })),
      {
        natMap: Object.fromEntries(via.map(([node, port]) => [`127.0.0.1:${node}`, { host: '127.0.0.1', port }])),
        clusterRetryStrategy: () => 50,
        redisOptions: { maxRetriesPerRequest: 1 },
      },
    );
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  private client(port: number): Redis {
    // Reconnect every 50 ms, so a healed link is used again at once (ioredis backs off to 2 s by default).
    const c = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: false,
      retryStrategy: () => 50,
      maxRetriesPerRequest: 1,
    });
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  /** Region `name`'s RedisStore: its home direct, its peers through the delayed links. */
  store(
    name: string,
    prefix: string,
    regions: Omit<RegionsOptions, 'name' | 'peers'> = {},
    timeoutMs = 200,
  ): RedisStore {
    const peers = Object.fromEntries(
      this.names
        .filter((n) => n !== name)
        .map((n) => {
          const c = this.clusterHomes.get(n);
          const peer =
            c !== undefined
              ? this.cluster(c.ports.map((port) => [port, this.links.get(`${name}>${n}>${port}`)!.port]))
              : this.client(this.links.get(`${name}>${n}`)!.port);
          return [n, peer];
        }),
    );
    return new RedisStore({
      client: this.home(name),
      prefix,
      timeoutMs,
      logger: false,
      regions: { name, peers, ...regions },
    });
  }

  /** Cuts every link to and from region `name`. */
  cut(name: string, mode: Cut = 'reset'): void {
    for (const [k, p] of this.links) if (k.split('>').includes(name)) p.cut(mode);
  }

  heal(name: string): void {
    for (const [k, p] of this.links) if (k.split('>').includes(name)) p.heal();
  }

  /** Bytes carried by every link between regions so far. */
  bytesBetweenRegions(): number {
    let n = 0;
    for (const p of this.links.values()) n += p.bytes.up + p.bytes.down;
    return n;
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.disconnect();
    for (const p of this.links.values()) await p.stop();
    for (const [i, s] of this.servers.entries()) {
      const c = this.clusterHomes.get(this.names[i]!);
      await (c ?? s).destroy();
    }
  }
}

/** An admission: its region (index in the world's names), when its reply came, and its window. */
export interface Admission {
  region: number;
  at: number;
  window: number;
}

/**
 * Offers `plan(elapsedMs)[region]` requests per region every `tickMs` for `ms`, and writes down every
 * admission with its reply time and window (the window's end is the send time + resetAfterMs: every
 * redis-server here reads the same clock as Date.now()), and the requests offered per window.
 */
export async function drive(
  ls: Limiter[],
  key: string | ((n: number) => string),
  ms: number,
  plan: (elapsed: number) => number[],
  windowMs: number,
  tickMs: number,
): Promise<{ admissions: Admission[]; offered: Map<number, number> }> {
  const admissions: Admission[] = [];
  const offered = new Map<number, number>();
  const pending: Promise<void>[] = [];
  const start = Date.now();
  let n = 0;
  await new Promise<void>((resolve) => {
    const t = setInterval(() => {
      const elapsed = Date.now() - start;
      if (elapsed >= ms) {
        clearInterval(t);
        resolve();
        return;
      }
      plan(elapsed).forEach((count, region) => {
        for (let i = 0; i < count; i++) {
          const sent = Date.now();
          const w = Math.floor(sent / windowMs);
          offered.set(w, (offered.get(w) ?? 0) + 1);
          pending.push(
            ls[region]!.limit(typeof key === 'string' ? key : key(n++)).then((d) => {
              if (d.allowed)
                admissions.push({
                  region,
                  at: performance.now(),
                  window: Math.round((sent + d.resetAfterMs) / windowMs) - 1,
                });
            }),
          );
        }
      });
    }, tickMs);
  });
  await Promise.all(pending);
  return { admissions, offered };
}

/**
 * Per window: the total admitted, and the bound computed from the admissions (src/distributed/regions/
 * table.ts, "The bound"): the limit plus what the regions other than the window's last admitter admitted
 * in the `sMs` before its last admission.
 */
export function windowsOf(
  admissions: Admission[],
  sMs: number,
  limit: number,
  regions: number,
): { window: number; total: number; bound: number; byRegion: number[] }[] {
  const ws = [...new Set(admissions.map((a) => a.window))].sort();
  return ws.map((w) => {
    const inW = admissions.filter((a) => a.window === w);
    const last = inW.reduce((a, b) => (b.at > a.at ? b : a));
    const late = inW.filter((a) => a.region !== last.region && a.at > last.at - sMs).length;
    return {
      window: w,
      total: inW.length,
      bound: limit + late,
      byRegion: Array.from({ length: regions }, (_, r) => inW.filter((a) => a.region === r).length),
    };
  });
}
