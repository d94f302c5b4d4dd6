/**
 * One tiny interface over the Node Redis and Valkey clients: ioredis and its fork iovalkey (Redis and
 * Cluster), node-redis v4 and later (client and cluster), and valkey-glide (GlideClient and
 * GlideClusterClient), and the one place that tells them apart. Arguments are strings, or bytes (a
 * Buffer) for a binary value, which every client sends as given. Cluster routing is the client's: every
 * call's keys share one hash slot, and every client routes a call by its keys. Only the connection layer
 * (connection.ts) and `setIfAbsent` call a client; features go through those.
 */
import { SluiceError, show } from '../../core/index.js';

export interface RedisAdapter {
  readonly kind: RedisDialect;
  readonly cluster: boolean;
  /** The server as a log line names it: host:port from the client's options, or what they say of it. */
  readonly name: string;
  /**
   * FCALL (Redis 7.0 and later), routed by its keys as EVALSHA is, on a client that can send it. Its
   * library is loaded with FUNCTION LOAD on every server (`servers()`: each master of a cluster), which
   * the connection does when a server answers "Function not found".
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
  evalsha(sha: string, keys: string[], args: Arg[]): Promise<unknown>;
  eval(source: string, keys: string[], args: Arg[]): Promise<unknown>;
  /** A plain command: `command.name`, then `keys` (of one hash slot), then `args`; see RedisCommand. */
  command(command: RedisCommand, keys: string[], args: Arg[]): Promise<unknown>;
  /**
   * Holds what is written to the connection until the returned function is called, so the calls of one
   * turn of the event loop leave in one write: ioredis writes each command by itself. Undefined where
   * there is nothing to hold (node-redis gathers a turn's commands itself; a cluster has a connection per
   * node; a client not connected).
   */
  cork(): (() => void) | undefined;
  /**
   * On a cluster, the address ('host:port') of the master the client would send a command on `slot`
   * to, from the client's own slot map; undefined when it has none yet (or is not a cluster). A batch of
   * keys of several slots of one master goes to it as one script call (table.ts).
   */
  nodeOf(slot: number): string | undefined;
  /** Listens to the client's 'error' events (node-redis crashes the process on an unheard one). */
  onError(listener: (err: unknown) => void): void;
  /** Listens to the client's 'ready' events (both clients emit one on each connection). */
  onReady(listener: () => void): void;
  /** Listens to the client's losing its connection: ioredis 'close', node-redis 'reconnecting' (it emits no close). */
  onClose(listener: () => void): void;
  /**
   * The servers behind the client, each named (host:port where the client says) with a way to send it one
   * command: the client itself, or each master of a cluster. For the store's checks of the server's
   * settings (health.ts) and for loading a function library on every master (connection.ts), not for
   * decisions.
   */
  servers(): Promise<ServerCommand[]>;
}

export interface ServerCommand {
  readonly name: string;
  send(args: string[]): Promise<unknown>;
}

/** An argument as a client sends it: text, or a binary value's bytes (a Buffer). */
export type Arg = string | Uint8Array;

/**
 * A plain Redis command (no script), as `redisCommand` makes it: sent as `name keys... args...`.
 * `bytes`: its bulk replies come back as bytes (Buffers), as a packed binary value must, where a client
 * would otherwise decode them as UTF-8 and lose bytes. `readonly`: it only reads (node-redis's cluster
 * routing asks).
 */
export interface RedisCommand {
  readonly name: string;
  readonly readonly: boolean;
  readonly bytes: boolean;
  /** ioredis's method for it: the command's name in lower case, with `Buffer` for bytes. */
  readonly method: string;
}

export function redisCommand(name: string, options: { readonly?: boolean; bytes?: boolean } = {}): RedisCommand {
  const bytes = options.bytes === true;
  return Object.freeze({
    name: name.toUpperCase(),
    readonly: options.readonly === true,
    bytes,
    method: name.toLowerCase() + (bytes ? 'Buffer' : ''),
  });
}

export interface FunctionCalls {
  fcall(fn: string, keys: string[], args: Arg[]): Promise<unknown>;
}

type Fn = (...args: unknown[]) => unknown;
type AnyClient = Record<string, unknown> & { on?: Fn };

/**
 * How a client takes its arguments: ioredis (and iovalkey) flat (`set(k, v, 'PX', ms, 'NX')`), node-redis
 * with an options object (`{ PX, NX }`), valkey-glide with its own (`{ conditionalSet, expiry }`).
 */
export type RedisDialect = 'ioredis' | 'node-redis' | 'glide';

/**
 * The dialect of a client, or undefined when it cannot be told: ioredis and iovalkey clients and
 * clusters have a string `status`, node-redis ones `isOpen` (clients) or `evalSha` (clients and
 * clusters), valkey-glide ones `customCommand` and `invokeScript`.
 */
export function dialectOf(client: unknown): RedisDialect | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  const c = client as AnyClient;
  if (typeof c.status === 'string') return 'ioredis';
  if ('isOpen' in c || typeof c.evalSha === 'function') return 'node-redis';
  if (typeof c.customCommand === 'function' && typeof c.invokeScript === 'function') return 'glide';
  return undefined;
}

/** `owner` names the option in errors: `RedisStore 'client' must be ...`. */
export function adapt(client: unknown, owner = 'RedisStore'): RedisAdapter {
  const c = client as AnyClient;
  const dialect = dialectOf(client);
  if (dialect === 'ioredis' && typeof c.evalsha === 'function') return ioredis(c);
  if (dialect === 'node-redis' && typeof c.evalSha === 'function') return nodeRedis(c);
  if (dialect === 'glide') return glide(c);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `${owner} 'client' must be an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster, or a valkey-glide GlideClient or GlideClusterClient, got ${show(typeof client === 'object' && client !== null ? (client.constructor?.name ?? 'an object') : client)}`,
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
export async function setIfAbsent(
  client: RedisSetClient,
  dialect: RedisDialect,
  key: string,
  value: string | Uint8Array,
  ttlMs: number,
): Promise<boolean> {
  const reply =
    dialect === 'ioredis'
      ? await client.set(key, value, 'PX', ttlMs, 'NX')
      : dialect === 'node-redis'
        ? await client.set(key, value, { PX: ttlMs, NX: true })
        : await client.set(key, value, { conditionalSet: 'onlyIfDoesNotExist', expiry: { type: 'PX', count: ttlMs } });
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
    name: cluster
      ? `the cluster of ${clusterName((c.startupNodes as unknown[] | undefined)?.[0])}`
      : serverName(c.options),
    // A Cluster routes FCALL by its first key (ioredis's command table knows FCALL's keys).
    functions:
      typeof send !== 'function'
        ? undefined
        : { fcall: (fn, keys, args) => send.call(c, 'FCALL', fn, keys.length, ...keys, ...args) as Promise<unknown> },
    ready: () => c.status === 'ready',
    connectLazy: () => {
      if (c.status === 'wait' && typeof c.connect === 'function')
        (c.connect as () => Promise<unknown>).call(c).catch(() => {}); // reported through 'error'
    },
    evalsha: (sha, keys, args) => evalsha.call(c, sha, keys.length, ...keys, ...args) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, keys.length, ...keys, ...args) as Promise<unknown>,
    // ioredis has a method per command, and one ending in Buffer for bytes replies.
    command: (command, keys, args) => (c[command.method] as Fn).call(c, ...keys, ...args) as Promise<unknown>,
    cork: () => {
      const stream = c.stream as { cork?: () => void; uncork?: () => void } | undefined;
      if (cluster || c.status !== 'ready' || typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function')
        return undefined;
      stream.cork();
      return () => stream.uncork!();
    },
    // ioredis Cluster's slots: per slot, the keys ('host:port') of its master and then its replicas.
    nodeOf: (slot) => (cluster ? (c.slots as string[][] | undefined)?.[slot]?.[0] : undefined),
    // A Redis (not a Cluster) with no 'error' listener of its app's prints each error itself ("[ioredis]
    // Unhandled error event"); the store's listener must not silence that, so it prints the same line then.
    onError: (listener) => listen(c, listener, 'error', cluster ? undefined : 'ioredis'),
    onReady: (listener) => listen(c, listener, 'ready'),
    // Not the close its owner asked for (quit, disconnect): ioredis has turned to 'end' by the time it emits
    // 'close' (its events come a tick late), and reconnects otherwise.
    onClose: (listener) => listen(c, () => c.status !== 'end' && listener(), 'close'),
    servers: async () => {
      const nodes = cluster ? (c.nodes as (role: string) => AnyClient[]).call(c, 'master') : [c];
      return nodes.map((n) => ({
        name: serverName(n.options),
        send: (args) => (n.call as Fn).call(n, ...args) as Promise<unknown>,
      }));
    },
  };
}

/** A cluster's first startup node, as given (a 'host:port' text, a port number, or { host, port }). */
function clusterName(node: unknown): string {
  if (typeof node === 'string' || typeof node === 'number') return String(node);
  return serverName(node);
}

/** host:port from a client's options, or 'redis' when they do not say (a Sentinel's primary, a URL only). */
function serverName(options: unknown): string {
  const o = (options ?? {}) as {
    host?: unknown;
    port?: unknown;
    name?: unknown;
    sentinels?: unknown;
    url?: unknown;
    socket?: { host?: unknown; port?: unknown };
  };
  if (Array.isArray(o.sentinels) && typeof o.name === 'string') return `the primary of '${o.name}'`;
  const host = o.host ?? o.socket?.host;
  const port = o.port ?? o.socket?.port;
  if (host !== undefined && port !== undefined) return `${String(host)}:${String(port)}`;
  if (typeof o.url === 'string') return o.url.replace(/\/\/[^@/]*@/, '//'); // no credentials in a log line
  return 'redis';
}

/** One listener per client and event, however many stores share the client, fanned out to each store's. */
const listeners = {
  error: new WeakMap<object, Array<(arg: unknown) => void>>(),
  ready: new WeakMap<object, Array<(arg: unknown) => void>>(),
  close: new WeakMap<object, Array<(arg: unknown) => void>>(),
  reconnecting: new WeakMap<object, Array<(arg: unknown) => void>>(),
};

/** Marks sluice's own listeners on a client, in every copy of sluice loaded (require and import each have one). */
const OURS = Symbol.for('sluice.clientListener');

/** Whether the client has an 'error' listener besides sluice's: its app's. */
function heardByApp(c: AnyClient): boolean {
  const all = (c.listeners as ((event: string) => unknown[]) | undefined)?.call(c, 'error');
  return all === undefined || all.some((l) => (l as { [OURS]?: true })[OURS] !== true);
}

/**
 * `unheard`: the client whose own output for an error no app listens to must still be printed (see the
 * ioredis adapter's onError).
 */
function listen(
  c: AnyClient,
  listener: (arg: unknown) => void,
  event: keyof typeof listeners = 'error',
  unheard?: 'ioredis',
): void {
  const byClient = listeners[event];
  let list = byClient.get(c);
  if (list === undefined) {
    const all: Array<(arg: unknown) => void> = (list = []);
    byClient.set(c, all);
    const fanOut = Object.assign(
      (arg: unknown) => {
        for (const l of all) l(arg);
        if (unheard === 'ioredis' && arg instanceof Error && !heardByApp(c))
          console.error('[ioredis] Unhandled error event:', arg.stack);
      },
      { [OURS]: true as const },
    );
    c.on?.call(c, event, fanOut);
  }
  list.push(listener);
}

interface NodeAddress {
  address?: string;
  host?: string;
  port?: number;
}

function nodeRedis(c: AnyClient): RedisAdapter {
  const evalSha = c.evalSha as Fn;
  const evalScript = c.eval as Fn;
  const cluster = 'masters' in c;
  const send = c.sendCommand as Fn | undefined; // a raw command (node-redis 4 and later)
  return {
    kind: 'node-redis',
    cluster,
    name: cluster
      ? `the cluster of ${clusterName((c.options as { rootNodes?: { url?: string }[] } | undefined)?.rootNodes?.[0]?.url)}`
      : serverName(c.options),
    functions:
      typeof send !== 'function'
        ? undefined
        : {
            // A cluster's sendCommand takes the key to route by, and whether the command only reads.
            fcall: cluster
              ? (fn, keys, args) =>
                  send.call(c, keys[0], false, ['FCALL', fn, String(keys.length), ...keys, ...args]) as Promise<unknown>
              : (fn, keys, args) =>
                  send.call(c, ['FCALL', fn, String(keys.length), ...keys, ...args]) as Promise<unknown>,
          },
    // v4's cluster has no isReady; it queues nothing unbounded once open.
    ready: () => (c.isReady ?? c.isOpen ?? true) === true,
    connectLazy: () => {},
    evalsha: (sha, keys, args) => evalSha.call(c, sha, { keys, arguments: args }) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, { keys, arguments: args }) as Promise<unknown>,
    command: (command, keys, args) => {
      const options = command.bytes ? bytesReply() : undefined;
      const argv = [command.name, ...keys, ...args];
      return (
        cluster ? send!.call(c, keys[0], command.readonly, argv, options) : send!.call(c, argv, options)
      ) as Promise<unknown>;
    },
    cork: () => undefined,
    // node-redis 5 and later: slots[slot].master.address; 4: getSlotMaster(slot), a { host, port }.
    nodeOf: (slot) => {
      if (!cluster) return undefined;
      const master = ((c.slots as { master?: NodeAddress }[] | undefined)?.[slot]?.master ??
        (c.getSlotMaster as ((s: number) => NodeAddress | undefined) | undefined)?.call(c, slot)) as
        | NodeAddress
        | undefined;
      return master === undefined ? undefined : (master.address ?? `${master.host}:${master.port}`);
    },
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
          return {
            name: `${m.host}:${m.port}`,
            send: (args: string[]) => (node.sendCommand as Fn).call(node, args) as Promise<unknown>,
          };
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

/**
 * valkey-glide's `Decoder.Bytes` (its enum, which sluice cannot import): bulk replies as Buffers. The
 * scripts reply integers and arrays of them, and SET a status, which no decoder changes.
 */
const GLIDE_BYTES = { decoder: 0 } as const;

/**
 * valkey-glide names a server's error by its Rust client's kind (`An error was signalled by the server:
 * - NoScriptError: No matching script...`); the connection layer reads the server's codes (NOSCRIPT,
 * NOPERM), so those two are given back their code. Other errors pass as glide made them.
 */
const GLIDE_KINDS: ReadonlyArray<[RegExp, string]> = [
  [/NoScriptError: /, 'NOSCRIPT '],
  [/PermissionDenied: /, 'NOPERM '],
];
function glideError(err: unknown): unknown {
  const why = String((err as Error)?.message ?? err);
  for (const [kind, code] of GLIDE_KINDS) {
    const at = why.search(kind);
    if (at >= 0) return new Error(code + why.slice(at).replace(kind, ''), { cause: err });
  }
  return err;
}

/**
 * valkey-glide (2.x). Every call is one customCommand (glide routes EVALSHA, FCALL, MGET and SET
 * by their keys on a cluster); glide loads no script here, so NOSCRIPT recovery stays the connection's.
 * Glide connects in createClient and reconnects by itself, has no events and no socket to cork (its
 * core writes a turn's commands together): it is ready until closed.
 */
function glide(c: AnyClient): RedisAdapter {
  const custom = c.customCommand as Fn;
  const command = (args: (string | Uint8Array)[], options?: object): Promise<unknown> =>
    (custom.call(c, args, options) as Promise<unknown>).catch((err: unknown) => Promise.reject(glideError(err)));
  const cluster = typeof c.invokeScriptWithRoute === 'function'; // GlideClusterClient's, not GlideClient's
  return {
    kind: 'glide',
    cluster,
    name: cluster ? 'the valkey-glide cluster' : 'valkey-glide',
    functions: { fcall: (fn, keys, args) => command(['FCALL', fn, String(keys.length), ...keys, ...args]) },
    ready: () => c.isClosed !== true,
    connectLazy: () => {},
    evalsha: (sha, keys, args) => command(['EVALSHA', sha, String(keys.length), ...keys, ...args]),
    eval: (source, keys, args) => command(['EVAL', source, String(keys.length), ...keys, ...args]),
    command: (cmd, keys, args) => command([cmd.name, ...keys, ...args], cmd.bytes ? GLIDE_BYTES : undefined),
    cork: () => undefined,
    nodeOf: () => undefined, // glide keeps its slot map to itself: batches group by slot
    onError: () => {},
    onReady: () => {},
    onClose: () => {},
    servers: async () => {
      if (!cluster) return [{ name: 'valkey-glide', send: (args) => command(args) }];
      // Each primary by its address: glide answers a command routed to all primaries with one reply per
      // address, as a GlideRecord ([{ key: address, value }], 2.x) or an object by address (1.x). ECHO, not
      // PING: glide folds every primary's PONG into one.
      const replies = await command(['ECHO', 'sluice'], { route: 'allPrimaries' });
      const addresses = Array.isArray(replies)
        ? replies.map((r) => String((r as { key?: unknown }).key))
        : typeof replies === 'object' && replies !== null
          ? Object.keys(replies)
          : [];
      return addresses.map((host) => ({
        name: host,
        send: (args: string[]) => command(args, { route: { type: 'routeByAddress', host } }),
      }));
    },
  };
}
