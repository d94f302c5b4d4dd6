// Three (or more) regions on this machine for the 'regions' strategy's tests and bench: a redis-server
// per region on its own port, and a DelayProxy for every directed link between regions, so that a
// region's store reaches its home directly and its peers only through the delayed, cuttable links.
import { Redis } from 'ioredis';
import { RedisStore } from '../../sluice/src/stores/redis/index.js';
import type { RegionsOptions } from '../../sluice/src/distributed/regions/options.js';
import { freePort, OwnRedis } from './harness.js';
import { DelayProxy, type Cut } from './delay-proxy.js';

export class World {
  readonly servers: OwnRedis[] = [];
  /** `from>to` → the proxy region `from` reaches region `to`'s Redis through. */
  readonly links = new Map<string, DelayProxy>();
  private readonly clients: Redis[] = [];

  constructor(
    readonly names: readonly string[],
    readonly delayMs: number,
  ) {}

  async start(): Promise<void> {
    for (const _ of this.names) {
      const s = new OwnRedis(await freePort());
      await s.start();
      this.servers.push(s);
    }
    for (const [i, from] of this.names.entries()) {
      for (const [j, to] of this.names.entries()) {
        if (i === j) continue;
        const p = new DelayProxy(this.servers[j]!.port, this.delayMs);
        await p.start();
        this.links.set(`${from}>${to}`, p);
      }
    }
  }

  /** A client on region `name`'s home Redis, direct (the region's own, local link). */
  home(name: string): Redis {
    return this.client(this.servers[this.names.indexOf(name)]!.port);
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
      this.names.filter((n) => n !== name).map((n) => [n, this.client(this.links.get(`${name}>${n}`)!.port)]),
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
    for (const s of this.servers) await s.destroy();
  }
}
