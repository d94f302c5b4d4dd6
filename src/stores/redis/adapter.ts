/**
 * One tiny interface over the two Node Redis clients: ioredis (Redis and Cluster) and node-redis v4 and
 * later (client and cluster), and the one place that tells them apart. Arguments are always strings,
 * which both accept (a feature sends binary values as one character per byte). Cluster routing is the
 * client's: every call's keys share one hash slot, and both clients route a script call by its first
 * key. Only the connection layer (connection.ts) and `setIfAbsent` call a client; features go through
 * those.
 */
import { SluiceError, show } from '../../core/index.js';

export interface RedisAdapter {
  readonly kind: 'ioredis' | 'node-redis';
  readonly cluster: boolean;
  /**
   * FCALL and FUNCTION LOAD (Redis 7.0 and later), on a client that is not a cluster and can send them.
   * Not on a cluster: a library must be loaded on every master, and neither client sends a keyless
   * command to the master of a given slot.
   */
  readonly functions: FunctionCalls | undefined;
  /** Whether a command sent now goes to a connection rather than into an offline queue. */
  ready(): boolean;
  /**
   * Starts connecting a client that waits for its first command to do so (ioredis `lazyConnect`,
   * status 'wait'), as that command would. Does nothing otherwise: a node-redis client connects when
   * its owner calls connect(), and a second call would throw in theirs.
   */
  connectLazy(): void;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * MGET of keys of one hash slot, each value as its bytes (null for none): a feature whose values are
   * packed binary (the guard's records) reads them without a script, and both clients would otherwise
   * decode them as UTF-8 and lose bytes.
   */
  values(keys: string[]): Promise<(Uint8Array | null)[]>;
  /**
   * `SET key value PX ttlMs NX` of a value given as a byte string (one character per byte, as features
   * send binary arguments), written as those bytes; true when the key was created. A feature whose
   * record is absent creates it without a script.
   */
  create(key: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * Holds what is written to the connection until the returned function is called, so the calls of one
   * turn of the event loop leave in one write: ioredis writes each command by itself. Undefined where
   * there is nothing to hold (node-redis gathers a turn's commands itself; a cluster has a connection per
   * node; a client not connected).
   */
  cork(): (() => void) | undefined;
  /** Listens to the client's 'error' events (node-redis crashes the process on an unheard one). */
  onError(listener: (err: unknown) => void): void;
  /** Listens to the client's 'ready' events (both clients emit one on each connection). */
  onReady(listener: () => void): void;
  /** Listens to the client's losing its connection: ioredis 'close', node-redis 'reconnecting' (it emits no close). */
  onClose(listener: () => void): void;
  /**
   * The servers behind the client, each named (host:port where the client says) with a way to send it one
   * command: the client itself, or each master of a cluster. For the store's checks of the server's
   * settings (health.ts), not for decisions.
   */
  servers(): Promise<ServerCommand[]>;
}

export interface ServerCommand {
  readonly name: string;
  send(args: string[]): Promise<unknown>;
}

export interface FunctionCalls {
  fcall(fn: string, keys: string[], args: string[]): Promise<unknown>;
  load(library: string): Promise<unknown>;
}

type Fn = (...args: unknown[]) => unknown;
type AnyClient = Record<string, unknown> & { on?: Fn };

/** How a client takes its arguments: ioredis flat (`set(k, v, 'PX', ms, 'NX')`), node-redis with an options object. */
export type RedisDialect = 'ioredis' | 'node-redis';

/**
 * The dialect of a client, or undefined when it cannot be told: ioredis clients and clusters have a
 * string `status`, node-redis ones `isOpen` (clients) or `evalSha` (clients and clusters).
 */
export function dialectOf(client: unknown): RedisDialect | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  const c = client as AnyClient;
  if (typeof c.status === 'string') return 'ioredis';
  if ('isOpen' in c || typeof c.evalSha === 'function') return 'node-redis';
  return undefined;
}

/** `owner` names the option in errors: `RedisStore 'client' must be ...`. */
export function adapt(client: unknown, owner = 'RedisStore'): RedisAdapter {
  const c = client as AnyClient;
  const dialect = dialectOf(client);
  if (dialect === 'ioredis' && typeof c.evalsha === 'function') return ioredis(c);
  if (dialect === 'node-redis' && typeof c.evalSha === 'function') return nodeRedis(c);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `${owner} 'client' must be an ioredis Redis or Cluster, or a node-redis client or cluster, got ${show(typeof client === 'object' && client !== null ? (client.constructor?.name ?? 'an object') : client)}`,
  );
}

/** A client's `set`, the one method `setIfAbsent` calls (so a client that only has that will do). */
export interface RedisSetClient {
  set(...args: any[]): Promise<unknown>;
}

/**
 * `SET key value NX PX ttlMs` in the client's dialect; true when the key was set. The dialect must be
 * right: node-redis ignores ioredis-style string arguments, which would drop NX.
 */
export async function setIfAbsent(client: RedisSetClient, dialect: RedisDialect, key: string, value: string | Uint8Array, ttlMs: number): Promise<boolean> {
  const reply = dialect === 'ioredis' ? await client.set(key, value, 'PX', ttlMs, 'NX') : await client.set(key, value, { PX: ttlMs, NX: true });
  return reply === 'OK';
}

function ioredis(c: AnyClient): RedisAdapter {
  const evalsha = c.evalsha as Fn;
  const evalScript = c.eval as Fn;
  const cluster = c.isCluster === true;
  const send = c.call as Fn | undefined; // any command by name (ioredis 4 and later)
  return {
    kind: 'ioredis',
    cluster,
    functions:
      cluster || typeof send !== 'function'
        ? undefined
        : {
            fcall: (fn, keys, args) => send.call(c, 'FCALL', fn, keys.length, ...keys, ...args) as Promise<unknown>,
            load: (library) => send.call(c, 'FUNCTION', 'LOAD', library) as Promise<unknown>,
          },
    ready: () => c.status === 'ready',
    connectLazy: () => {
      if (c.status === 'wait' && typeof c.connect === 'function') (c.connect as () => Promise<unknown>).call(c).catch(() => {}); // reported through 'error'
    },
    evalsha: (sha, keys, args) => evalsha.call(c, sha, keys.length, ...keys, ...args) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, keys.length, ...keys, ...args) as Promise<unknown>,
    values: (keys) => (c.mgetBuffer as Fn).call(c, ...keys) as Promise<(Uint8Array | null)[]>,
    create: (key, value, ttlMs) => setIfAbsent(c as unknown as RedisSetClient, 'ioredis', key, Buffer.from(value, 'latin1'), ttlMs),
    cork: () => {
      const stream = c.stream as { cork?: () => void; uncork?: () => void } | undefined;
      if (cluster || c.status !== 'ready' || typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return undefined;
      stream.cork();
      return () => stream.uncork!();
    },
    onError: (listener) => listen(c, listener),
    onReady: (listener) => listen(c, listener, 'ready'),
    // Not the close its owner asked for (quit, disconnect): ioredis has turned to 'end' by the time it emits
    // 'close' (its events come a tick late), and reconnects otherwise.
    onClose: (listener) => listen(c, () => c.status !== 'end' && listener(), 'close'),
    servers: async () => {
      const nodes = cluster ? ((c.nodes as (role: string) => AnyClient[]).call(c, 'master')) : [c];
      return nodes.map((n) => ({ name: serverName(n.options), send: (args) => (n.call as Fn).call(n, ...args) as Promise<unknown> }));
    },
  };
}

/** host:port from a client's options, or 'redis' when they do not say (a Sentinel's primary, a URL only). */
function serverName(options: unknown): string {
  const o = (options ?? {}) as { host?: unknown; port?: unknown; name?: unknown; sentinels?: unknown; url?: unknown; socket?: { host?: unknown; port?: unknown } };
  if (Array.isArray(o.sentinels) && typeof o.name === 'string') return `the primary of '${o.name}'`;
  const host = o.host ?? o.socket?.host;
  const port = o.port ?? o.socket?.port;
  if (host !== undefined && port !== undefined) return `${String(host)}:${String(port)}`;
  if (typeof o.url === 'string') return o.url.replace(/\/\/[^@/]*@/, '//'); // no credentials in a log line
  return 'redis';
}

/** One listener per client and event, however many stores share the client, fanned out to each store's. */
const listeners = { error: new WeakMap<object, Array<(arg: unknown) => void>>(), ready: new WeakMap<object, Array<(arg: unknown) => void>>(), close: new WeakMap<object, Array<(arg: unknown) => void>>(), reconnecting: new WeakMap<object, Array<(arg: unknown) => void>>() };
function listen(c: AnyClient, listener: (arg: unknown) => void, event: keyof typeof listeners = 'error'): void {
  const byClient = listeners[event];
  let list = byClient.get(c);
  if (list === undefined) {
    const all: Array<(arg: unknown) => void> = (list = []);
    byClient.set(c, all);
    c.on?.call(c, event, (arg: unknown) => {
      for (const l of all) l(arg);
    });
  }
  list.push(listener);
}

function nodeRedis(c: AnyClient): RedisAdapter {
  const evalSha = c.evalSha as Fn;
  const evalScript = c.eval as Fn;
  const cluster = 'masters' in c;
  const send = c.sendCommand as Fn | undefined; // a raw command (node-redis 4 and later)
  return {
    kind: 'node-redis',
    cluster,
    functions:
      cluster || typeof send !== 'function'
        ? undefined
        : {
            fcall: (fn, keys, args) => send.call(c, ['FCALL', fn, String(keys.length), ...keys, ...args]) as Promise<unknown>,
            load: (library) => send.call(c, ['FUNCTION', 'LOAD', library]) as Promise<unknown>,
          },
    // v4's cluster has no isReady; it queues nothing unbounded once open.
    ready: () => (c.isReady ?? c.isOpen ?? true) === true,
    connectLazy: () => {},
    evalsha: (sha, keys, args) => evalSha.call(c, sha, { keys, arguments: args }) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, { keys, arguments: args }) as Promise<unknown>,
    values: (keys) => (cluster ? send!.call(c, keys[0], true, ['MGET', ...keys], bytesReply()) : send!.call(c, ['MGET', ...keys], bytesReply())) as Promise<(Uint8Array | null)[]>,
    create: (key, value, ttlMs) => setIfAbsent(c as unknown as RedisSetClient, 'node-redis', key, Buffer.from(value, 'latin1'), ttlMs),
    cork: () => undefined,
    onError: (listener) => listen(c, listener),
    onReady: (listener) => listen(c, listener, 'ready'),
    onClose: (listener) => listen(c, listener, 'reconnecting'),
    servers: async () => {
      if (!cluster) return [{ name: serverName(c.options), send: (args) => send!.call(c, args) as Promise<unknown> }];
      const masters = c.masters as { host?: string; port?: number }[];
      const nodeClient = c.nodeClient as (m: unknown) => Promise<AnyClient>;
      return Promise.all(
        masters.map(async (m) => {
          const node = await nodeClient.call(c, m);
          return { name: `${m.host}:${m.port}`, send: (args: string[]) => (node.sendCommand as Fn).call(node, args) as Promise<unknown> };
        }),
      );
    },
  };
}

/**
 * node-redis's option for bulk replies as bytes: `returnBuffers` in v4, a type mapping of RESP blob
 * strings (type 36, '$') to Buffer in v5 and later; each version ignores the other's. Made on first use:
 * node-redis runs where Buffer is a global.
 */
let bytes: object | undefined;
function bytesReply(): object {
  return (bytes ??= { returnBuffers: true, typeMapping: { 36: (globalThis as { Buffer?: unknown }).Buffer } });
}
