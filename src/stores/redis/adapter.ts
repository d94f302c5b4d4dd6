/**
 * One tiny interface over the two Node Redis clients: ioredis (Redis and Cluster) and node-redis v4 and
 * later (client and cluster). Arguments are always strings, which both accept. Cluster routing is the
 * client's: every call's keys share one hash slot, and both clients route a script call by its first key.
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
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  /** Listens to the client's 'error' events (node-redis crashes the process on an unheard one). */
  onError(listener: (err: unknown) => void): void;
}

export interface FunctionCalls {
  fcall(fn: string, keys: string[], args: string[]): Promise<unknown>;
  load(library: string): Promise<unknown>;
}

type Fn = (...args: unknown[]) => unknown;
type AnyClient = Record<string, unknown> & { on?: Fn };

export function adapt(client: unknown): RedisAdapter {
  const c = client as AnyClient;
  if (typeof client === 'object' && client !== null) {
    if (typeof c.evalsha === 'function' && typeof c.status === 'string') return ioredis(c);
    if (typeof c.evalSha === 'function') return nodeRedis(c);
  }
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `RedisStore 'client' must be an ioredis Redis or Cluster, or a node-redis client or cluster, got ${show(typeof client === 'object' && client !== null ? (client.constructor?.name ?? 'an object') : client)}`,
  );
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
    evalsha: (sha, keys, args) => evalsha.call(c, sha, keys.length, ...keys, ...args) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, keys.length, ...keys, ...args) as Promise<unknown>,
    onError: (listener) => listen(c, listener),
  };
}

/** One 'error' listener per client, however many stores share it, fanned out to each store's listener. */
const listeners = new WeakMap<object, Array<(err: unknown) => void>>();
function listen(c: AnyClient, listener: (err: unknown) => void): void {
  let list = listeners.get(c);
  if (list === undefined) {
    const all: Array<(err: unknown) => void> = (list = []);
    listeners.set(c, all);
    c.on?.call(c, 'error', (err: unknown) => {
      for (const l of all) l(err);
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
    evalsha: (sha, keys, args) => evalSha.call(c, sha, { keys, arguments: args }) as Promise<unknown>,
    eval: (source, keys, args) => evalScript.call(c, source, { keys, arguments: args }) as Promise<unknown>,
    onError: (listener) => listen(c, listener),
  };
}
