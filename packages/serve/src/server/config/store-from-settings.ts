/**
 * The one place that turns settings into a store: the in-memory store by default, or a RedisStore
 * (`sluice/redis`, loaded only when asked for, with ioredis) for --redis / --redis-cluster. Everything Redis-
 * specific the service needs (readiness, shutdown) is answered here too.
 */
import { MemoryStore, type Store, type StoreTable, type TableSpec } from 'sluice/kit';
import { readSettingFile } from './settings.js';
import type { Settings } from './settings.js';
import type { Logger } from 'pino';
import { storeEventLog } from '../operator/store-log.js';

export interface ServiceStore {
  readonly store: Store;
  readonly kind: 'memory' | 'redis' | 'redis-cluster' | 'redis-sentinel';
  /** False while a configured Redis does not answer a PING within 500 ms, whatever the failure mode. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

// Held in variables so TypeScript does not resolve them at build time: `sluice/redis` and ioredis are
// optional, and the memory store must work without either.
const REDIS_STORE_MODULE = 'sluice/redis';
const IOREDIS = 'ioredis';

/** Reports a missing optional module with what to install, instead of a bare ERR_MODULE_NOT_FOUND. */
async function load(specifier: string, hint: string): Promise<Record<string, unknown>> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
      throw new Error(`${hint} (${(e as Error).message.split('\n')[0]})`);
    throw e;
  }
}

/** Whether this build has the Redis store and a client for it (tests use it to choose their variants). */
export async function redisAvailable(): Promise<boolean> {
  try {
    await import(REDIS_STORE_MODULE);
    await import(IOREDIS);
    return true;
  } catch {
    return false;
  }
}

interface RedisClientLike {
  ping(): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** `log`: where store trouble goes (storeEventLog); none without it. */
export async function storeFromSettings(settings: Settings, log?: Logger): Promise<ServiceStore> {
  if (settings.redis === undefined && settings.redisCluster === undefined && settings.redisSentinel === undefined) {
    return {
      store: new MemoryStore({ maxKeys: settings.maxKeys, onFull: settings.memoryOnFull }),
      kind: 'memory',
      ready: async () => true,
      close: async () => {},
    };
  }
  const redisModule = await load(REDIS_STORE_MODULE, 'this build of sluice has no Redis store (sluice/redis)');
  const ioredis = await load(
    IOREDIS,
    '--redis, --redis-cluster and --redis-sentinel need the ioredis package: npm install ioredis',
  );
  const Redis = (ioredis.default ?? ioredis.Redis) as {
    new (url: string, o: object): RedisClientLike;
    new (o: object): RedisClientLike;
    Cluster: new (nodes: object[], o: object) => RedisClientLike;
  };
  // Commands fail fast while Redis is down (no offline queue, one retry), so the failure policy answers
  // within timeoutMs instead of requests piling up behind a reconnect.
  const clientOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
    ...connectionOptions(settings),
  };
  let client: RedisClientLike;
  let kind: ServiceStore['kind'];
  if (settings.redisCluster !== undefined) {
    const nodes = hostPorts(settings.redisCluster);
    // Over TLS the nodes are reached by the names they announce, so that their certificates match (ElastiCache and
    // other managed clusters): ioredis must not swap the names for addresses first.
    const dnsLookup =
      'tls' in clientOptions
        ? { dnsLookup: (address: string, done: (e: null, a: string) => void) => done(null, address) }
        : {};
    client = new Redis.Cluster(nodes, { enableOfflineQueue: false, redisOptions: clientOptions, ...dnsLookup });
    kind = 'redis-cluster';
  } else if (settings.redisSentinel !== undefined) {
    // The Sentinels name the primary; on a failover ioredis asks them again and reconnects to the new one.
    // failoverDetector: it also listens to the Sentinels' +switch-master, so a primary that hangs (frozen,
    // or partitioned with its TCP connections up) is left on promotion, not when it closes the connection.
    // The Redis AUTH settings are the primary's and replicas'; the Sentinels themselves are asked without.
    // With TLS both hops use it, with the same CA: a deployment that encrypts its Redis encrypts its
    // Sentinels too (tls-replication), and ioredis otherwise reaches a TLS primary in plain text.
    const at = settings.redisSentinel.indexOf('@');
    const tls = 'tls' in clientOptions ? { enableTLSForSentinelMode: true, sentinelTLS: clientOptions.tls } : {};
    client = new Redis({
      ...clientOptions,
      ...tls,
      failoverDetector: true,
      name: settings.redisSentinel.slice(0, at),
      sentinels: hostPorts(settings.redisSentinel.slice(at + 1)),
    });
    kind = 'redis-sentinel';
  } else {
    client = new Redis(settings.redis!, clientOptions);
    kind = 'redis';
  }
  const clients = [client];
  const RedisStore = redisModule.RedisStore as new (o: object) => Store;
  // With --region: the other regions' Redis, reached only by the exchange (off the decisions' path).
  const peers = (settings.regionPeers ?? '')
    .split(',')
    .filter(Boolean)
    .map((p) => p.split(/=(.*)/s) as [string, string]);
  const peerClients = Object.fromEntries(
    peers.map(([name, url]) => [name, new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false })]),
  );
  for (const c of Object.values(peerClients))
    (c as unknown as { on(e: string, f: () => void): void }).on('error', () => {});
  const regions =
    settings.region === undefined
      ? {}
      : { regions: { name: settings.region, peers: peerClients, exchangeMs: settings.regionExchangeMs } };
  const storeOf = (c: RedisClientLike, which: string) =>
    new RedisStore({
      ...regions,
      client: c,
      prefix: settings.redisPrefix,
      timeoutMs: settings.redisTimeoutMs,
      onError: settings.failureMode,
      connectTimeoutMs: settings.redisConnectTimeoutMs,
      ...(log === undefined
        ? {}
        : { onEvent: storeEventLog(log, { store: which, failureMode: settings.failureMode }) }),
    });
  let store = storeOf(client, kind);
  if (settings.redisPerSecond !== undefined) {
    // Its own URL's credentials and scheme only: the main Redis's AUTH settings are not its. The CA of
    // --redis-tls-ca is, when its URL is rediss://.
    const tls =
      settings.redisPerSecond.startsWith('rediss:') && settings.redisTlsCa !== undefined
        ? { tls: { ca: readSettingFile('--redis-tls-ca', settings.redisTlsCa) } }
        : {};
    const perSecond = new Redis(settings.redisPerSecond, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      ...tls,
    });
    clients.push(perSecond);
    store = new PerSecondSplit(store, storeOf(perSecond, 'redis-per-second'));
  }
  await Promise.all(clients.map((c) => connected(c, settings.redisConnectTimeoutMs)));
  // Peers are not waited for, nor part of ready(): a region that is cut off keeps deciding with its share.
  const closing = [...clients, ...(Object.values(peerClients) as RedisClientLike[])];
  return {
    store,
    kind,
    // Not ready while Redis does not answer, whatever the failure mode: with 'open' every decision is then an
    // allowance nobody counts, which a load balancer or an operator must be able to see.
    async ready() {
      const timeout = new Promise<false>((resolve) => setTimeout(resolve, 500, false).unref());
      const pings = Promise.all(clients.map((c) => c.ping())).then(
        () => true,
        () => false,
      );
      return Promise.race([pings, timeout]);
    },
    async close() {
      await Promise.race([
        Promise.all(closing.map((c) => c.quit().catch(() => {}))),
        new Promise((r) => setTimeout(r, 1000).unref()),
      ]);
      for (const c of closing) c.disconnect();
    },
  };
}

/**
 * Resolves once a client is connected, or after `ms`. With no offline queue a command sent before the
 * connection is up fails at once, so start-up waits for it; briefly, since a Redis that is down at start-up
 * is the failure mode's to answer, not a reason not to start.
 */
function connected(client: RedisClientLike, ms: number): Promise<void> {
  const events = client as unknown as { on(e: string, f: () => void): void; once(e: string, f: () => void): void };
  events.on('error', () => {}); // reported through the store's onEvent, ready() and metrics
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    events.once('ready', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * Envoy ratelimit's per-second Redis: a limiter whose every window is at most a second keeps its state in
 * `perSecond`, any other in `main`. A store binds per limiter, so a rule's keys all live on one side.
 */
export class PerSecondSplit implements Store {
  constructor(
    readonly main: Store,
    readonly perSecond: Store,
  ) {}

  bind(spec: TableSpec): StoreTable {
    return (spec.policies.every((p) => p.windowMs <= 1000) ? this.perSecond : this.main).bind(spec);
  }
}

/**
 * AUTH and TLS for every Redis connection, from --redis-username, --redis-password, --redis-tls and
 * --redis-tls-ca. For --redis, a user or password in the URL wins (ioredis fills options in from the URL
 * first); TLS is on if either the URL (rediss://) or these ask for it.
 */
function connectionOptions(settings: Settings): { username?: string; password?: string; tls?: { ca?: Buffer } } {
  const o: { username?: string; password?: string; tls?: { ca?: Buffer } } = {};
  if (settings.redisUsername !== undefined) o.username = settings.redisUsername;
  if (settings.redisPassword !== undefined) o.password = settings.redisPassword;
  if (settings.redisTlsCa !== undefined) o.tls = { ca: readSettingFile('--redis-tls-ca', settings.redisTlsCa) };
  else if (settings.redisTls) o.tls = {};
  return o;
}

/** `host:port,host:port` as ioredis takes it. */
function hostPorts(list: string): { host: string; port: number }[] {
  return list.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
  });
}
