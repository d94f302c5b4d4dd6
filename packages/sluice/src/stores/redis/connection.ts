/**
 * The Redis connection layer: the one place in sluice that sends to a Redis client. A RedisConnection
 * wraps one ioredis or node-redis client (adapter.ts) with what every feature keeping state on Redis
 * needs: readiness, one deadline per call (deadlines.ts), a bound on calls awaiting an answer, counters,
 * and running a script: FCALL where the server allows functions and the script is a library, EVALSHA
 * otherwise; a missing script (NOSCRIPT) or function ("Function not found") is reloaded and the call
 * retried once (found by a reply after the deadline, it is loaded and not retried), and no other error is
 * retried.
 *
 * A feature with Lua of its own (the guard's state, say) defines its script once and runs it here:
 *
 * @example
 * import { defineScript } from './script.js';
 * const GUARD = defineScript('guard', source);
 * const connection = new RedisConnection({ client, timeoutMs: 50, owner: 'RedisGuardState' });
 * const reply = await connection.run(GUARD, keys, args);
 * // rejects with ERR_SLUICE_STORE_UNAVAILABLE when the client is not connected, too many calls are
 * // unanswered, or no answer comes within timeoutMs; with the reply's error when Redis answers one
 *
 * `send` is the same call without a Promise, for a caller that answers many operations from one reply
 * (the limiter's batched tables). Either also sends a plain command (adapter.ts, redisCommand) in place
 * of a script, with the same deadline, bound and counters, and no retry: a feature reading its packed
 * values with MGET, say, needs no script for it.
 *
 * @example
 * const MGET_BYTES = redisCommand('MGET', { readonly: true, bytes: true });
 * const values = await connection.run(MGET_BYTES, keys, []);
 */
import { SluiceError } from '../../core/index.js';
import { adapt, type Arg, type RedisAdapter, type RedisCommand, type ServerCommand } from './adapter.js';
import { Deadlines, type Pending } from './deadlines.js';
import { healthOf, type HealthReport, type StoreHealth } from './health.js';
import { isLibrary, type Script } from './script-shape.js';
import { realNextTick, realPerformanceNow, realSetImmediate, realSetTimeout } from '../../runtime.js';

export { redisCommand, type Arg, type RedisCommand } from './adapter.js';

/** What a connection runs: a script, or a plain command. */
export type Command = Script | RedisCommand;

function isPlain(command: Command): command is RedisCommand {
  return (command as RedisCommand).method !== undefined;
}

/** What a connection counts. A store passes its own stats object (with more fields) to count into. */
export interface ConnectionStats {
  /** Calls sent (script calls and reads of values), and operations they carried (a batched call carries several). */
  calls: number;
  operations: number;
  /** Calls that got no answer within timeoutMs, and calls (or client events) that failed with an error. */
  timeouts: number;
  errors: number;
  /**
   * Calls answered by Redis after their timeoutMs, when the caller already had its failure answer: Redis
   * applied them all the same (see docs/redis.md, "Late replies").
   */
  late: number;
  /** Calls refused without being sent: client not connected (after the first connect wait), or too many calls unanswered. */
  refused: number;
  /** NOSCRIPT or "Function not found" replies, each followed by one reload (EVAL, FUNCTION LOAD) and retry. */
  reloads: number;
}

export function connectionStats(): ConnectionStats {
  return { calls: 0, operations: 0, timeouts: 0, errors: 0, late: 0, refused: 0, reloads: 0 };
}

/** Default `connectTimeoutMs`: long enough for a TLS handshake to a Redis in another zone, short enough to notice at start-up. */
export const CONNECT_TIMEOUT_MS = 2000;

export interface RedisConnectionOptions {
  /** An ioredis or iovalkey Redis or Cluster, a node-redis (v4 or later) client or cluster, or a valkey-glide GlideClient or GlideClusterClient. */
  client: unknown;
  /** Longest wait for an answer per call. */
  timeoutMs: number;
  /**
   * How long calls wait for the client's first connection, from when the connection is made. Until the
   * client has been ready once, calls are held (at most `maxInFlight` of them) and sent when it is;
   * after this, and after any later disconnect, calls are refused at once. Default CONNECT_TIMEOUT_MS.
   */
  connectTimeoutMs?: number;
  /** Most calls awaiting an answer (or the first connection); beyond it calls are refused instead of queueing. Default: no bound. */
  maxInFlight?: number;
  /** The feature's name, which starts every error message: 'RedisStore', 'RedisGuardState'. */
  owner: string;
  /** Counters to add to (a store's stats object); default a fresh one, at `connection.stats`. */
  stats?: ConnectionStats;
  /**
   * What the feature wants told of the client's trouble, and what it does meanwhile (health.ts): every
   * call's outcome is reported to the client's one StoreHealth.
   */
  report?: HealthReport;
}

/**
 * Called once per call: with the reply, or with `failed` true and the error (a SluiceError
 * ERR_SLUICE_STORE_UNAVAILABLE when refused or timed out; the client's error otherwise). `tag` is the
 * value given to `send`, so one function serves every call without a closure per call. A failure that
 * involved no I/O (a refusal) is delivered from a macrotask (setImmediate), never synchronously: a
 * caller's tight `await` loop then still lets timers and sockets run, and sees Redis as soon as it is back.
 */
export type Done<T> = (tag: T, reply: unknown, failed: boolean, err: unknown) => void;

interface Call<T> extends Pending {
  readonly done: Done<T>;
  readonly tag: T;
}

/** A call held until the client's first connection (or refused: then only done, tag and err matter). */
interface Held {
  readonly script: Command;
  readonly keys: string[];
  readonly args: Arg[];
  readonly done: Done<any>;
  readonly tag: unknown;
  readonly operations: number;
  err: unknown;
}

/** How often held calls look for the first connection (clients differ in the events they emit; all have a state to read). */
const CONNECT_POLL_MS = 5;

/** Replies that say a function library is not loaded on this server (Redis 7.0 to 8). */
const FUNCTION_MISSING = /Function not found/i;
/** FUNCTION LOAD of a library whose name, and so whose code, is already there. */
const LIBRARY_EXISTS = /already exists/i;
/** A server without functions (before 7.0), or a user whose ACL does not allow FCALL or FUNCTION LOAD. */
const FUNCTIONS_REFUSED = /unknown command|NOPERM/i;

const message = (err: unknown): string => String((err as Error)?.message ?? err);

export class RedisConnection {
  readonly owner: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxInFlight: number;
  readonly stats: ConnectionStats;
  /** Whether the client is a cluster: every call's keys must then share one hash slot. */
  readonly cluster: boolean;
  /** The client's health, shared by every feature on it: told of every call's outcome. */
  readonly health: StoreHealth;
  /** Calls sent and not yet answered by Redis (answered late after a timeout included). */
  inFlight = 0;
  private readonly adapter: RedisAdapter;
  private readonly deadlines: Deadlines<Call<any>>;
  /** Whether library scripts go as FCALL: until the server or the user's ACL turns out not to allow it. */
  private functions: boolean;
  /** FUNCTION LOADs under way, by library, which every call that found its library missing awaits. */
  private readonly loading = new Map<string, Promise<unknown>>();
  /** Whether the client has been ready once; until then (and connectBy) calls are held, not refused. */
  private connected = false;
  private readonly connectBy: number;
  /** Calls held for the first connection, in order; undefined when there are none (the fast path's one check). */
  private held: Held[] | undefined;
  /** Refusals awaiting their macrotask. */
  private refusals: Held[] = [];
  private readonly deliverNow = () => this.deliver();
  /** Releases the client's connection held since this turn's first call (adapter.cork), if held. */
  private uncork: (() => void) | undefined;
  private readonly uncorkNow = () => this.writeNow();
  private readonly pollNow = () => this.poll();

  /** Writes this turn's calls so far to the connection now, rather than at the turn's end (see send). */
  writeNow(): void {
    const uncork = this.uncork;
    if (uncork === undefined) return;
    this.uncork = undefined;
    uncork();
  }

  constructor(options: RedisConnectionOptions) {
    this.owner = options.owner;
    this.adapter = adapt(options.client, options.owner);
    this.cluster = this.adapter.cluster;
    this.timeoutMs = options.timeoutMs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.connectBy = realPerformanceNow() + this.connectTimeoutMs;
    this.maxInFlight = options.maxInFlight ?? Infinity;
    this.stats = options.stats ?? connectionStats();
    this.functions = this.adapter.functions !== undefined;
    this.deadlines = new Deadlines<Call<any>>(this.timeoutMs, (call) => {
      this.stats.timeouts++;
      const err = new SluiceError(
        'ERR_SLUICE_STORE_UNAVAILABLE',
        `${this.owner}: no answer within 'timeoutMs' ${this.timeoutMs}`,
      );
      this.health.failed(err);
      call.done(call.tag, undefined, true, err);
    });
    this.adapter.onError(() => this.stats.errors++);
    this.health = healthOf(options.client, this.adapter, this.connectTimeoutMs);
    this.health.join(options.report ?? { meanwhile: `${this.owner} answers by its failure policy` });
    // A client that has been ready once is not waited for again, even if no call saw it ready.
    this.connected = this.adapter.ready();
    if (!this.connected) this.adapter.onReady(() => (this.connected = true));
  }

  /** On a cluster, the master (its 'host:port') the client sends a command on `slot` to, if it knows (adapter.ts). */
  nodeOf(slot: number): string | undefined {
    return this.adapter.nodeOf(slot);
  }

  /**
   * Calls `listener` each time the client becomes ready: its first connection and every reconnection.
   * For a feature that sets something up on each connection (proof of work's epoch), on the client's
   * own events, so it needs no second adapter of its own.
   */
  onReady(listener: () => void): void {
    this.adapter.onReady(listener);
  }

  /** Whether a call sent now goes to a connection (rather than being held or refused as not connected). */
  ready(): boolean {
    return this.adapter.ready();
  }

  /**
   * Resolves once the client is ready (at once if it is); rejects with ERR_SLUICE_STORE_UNAVAILABLE if
   * it is not within `timeoutMs` (default connectTimeoutMs) of this call.
   */
  whenReady(timeoutMs: number = this.connectTimeoutMs): Promise<void> {
    if (this.adapter.ready()) return Promise.resolve();
    this.adapter.connectLazy();
    const by = realPerformanceNow() + timeoutMs;
    return new Promise<void>((resolve, reject) => {
      const check = () => {
        if (this.adapter.ready()) {
          this.connected = true;
          resolve();
        } else if (realPerformanceNow() >= by)
          reject(
            new SluiceError(
              'ERR_SLUICE_STORE_UNAVAILABLE',
              `${this.owner}: the Redis client did not connect within ${timeoutMs} ms${this.hint()}`,
            ),
          );
        else realSetTimeout(check, Math.min(CONNECT_POLL_MS, Math.max(1, by - realPerformanceNow())));
      };
      realSetTimeout(check, CONNECT_POLL_MS);
    });
  }

  /** Runs `script` (or a plain command) on `keys` (one hash slot) with `args` within timeoutMs; see the file's comment. */
  run(script: Command, keys: string[], args: Arg[]): Promise<unknown> {
    return new Promise((resolve, reject) => this.send(script, keys, args, settlePromise, { resolve, reject }, 1));
  }

  /**
   * `run` without a Promise, for a call that carries `operations` operations: `done(tag, ...)` is called
   * exactly once, when the reply, the error or the deadline comes, or (from a macrotask) when the call
   * is refused.
   */
  send<T>(script: Command, keys: string[], args: Arg[], done: Done<T>, tag: T, operations: number): void {
    if (!this.adapter.ready() || this.inFlight >= this.maxInFlight || this.held !== undefined) {
      this.hold(script, keys, args, done, tag, operations);
      return;
    }
    const stats = this.stats;
    stats.calls++;
    stats.operations += operations;
    this.inFlight++;
    const call: Call<T> = { deadline: this.deadlines.deadline(), settled: false, extended: undefined, done, tag };
    this.deadlines.add(call);
    // A turn's calls (a batch flushed in several, the reads and the writes) leave in one write, at the
    // turn's end or when the caller asks (writeNow).
    if (this.uncork === undefined) {
      this.uncork = this.adapter.cork();
      if (this.uncork !== undefined) realNextTick(this.uncorkNow);
    }
    // Whether a library goes as FCALL, as of sending: a refusal that turns the connection to EVALSHA may
    // come while other FCALLs are in flight, and each of those is still recovered as an FCALL.
    const functions = this.functions;
    // Inline arrows, not named consts: the benchmark runs through tsx, whose keepNames would otherwise
    // define a `name` on each per call, a few hundred ns at one call in flight.
    this.invoke(script, keys, args).then(
      (reply) => this.settle(call, reply, false, undefined),
      (err: unknown) => {
        let again: Promise<unknown> | undefined;
        try {
          // A call already answered by its deadline is not retried (its caller acted on the failure), but a
          // missing script it found is loaded all the same: on a link whose round trip exceeds timeoutMs
          // every NOSCRIPT comes late, and the script was otherwise never loaded, so no call ever ran.
          if (call.settled) this.loadLate(script, err, functions);
          else again = this.recover(script, err, keys, args, functions);
          // Redis answered: the reload (a library on every master) and the retry get connectTimeoutMs,
          // not what is left of timeoutMs, or the first calls after a restart or failover would get the
          // failure policy whenever loading takes longer than a call.
          if (again !== undefined) this.deadlines.extend(call, Math.max(this.timeoutMs, this.connectTimeoutMs));
        } catch (thrown) {
          err = thrown; // a client that throws instead of rejecting: no rejection may go unhandled
        }
        if (again === undefined) this.settle(call, undefined, true, err);
        else
          again.then(
            (reply) => this.settle(call, reply, false, undefined),
            (err2: unknown) => this.settle(call, undefined, true, err2),
          );
      },
    );
    this.connected = true;
  }

  /** The slow path of send: hold the call for the first connection, or refuse it. */
  private hold<T>(script: Command, keys: string[], args: Arg[], done: Done<T>, tag: T, operations: number): void {
    const held: Held = { script, keys, args, done, tag, operations, err: undefined };
    if (this.adapter.ready()) {
      this.connected = true;
      if (this.held !== undefined) this.release();
      if (this.inFlight < this.maxInFlight) {
        this.send(script, keys, args, done, tag, operations);
        return;
      }
    } else if (!this.connected && realPerformanceNow() < this.connectBy) {
      if (this.held === undefined) {
        this.held = [];
        this.adapter.connectLazy();
        realSetTimeout(this.pollNow, CONNECT_POLL_MS);
      }
      if (this.inFlight + this.held.length < this.maxInFlight) {
        this.held.push(held);
        return;
      }
    }
    this.refuse(held);
  }

  /** While calls are held: sends them once the client is ready, refuses them once connectBy has passed. */
  private poll(): void {
    if (this.held === undefined) return;
    if (this.adapter.ready()) {
      this.connected = true;
      this.release();
      return;
    }
    const left = this.connectBy - realPerformanceNow();
    if (left > 0) {
      realSetTimeout(this.pollNow, Math.min(CONNECT_POLL_MS, Math.ceil(left)));
      return;
    }
    const held = this.held;
    this.held = undefined;
    for (const h of held) this.refuse(h);
  }

  /** Sends the held calls, in the order they came (the calls on one key keep their order). */
  private release(): void {
    const held = this.held!;
    this.held = undefined;
    for (const h of held) {
      if (this.adapter.ready() && this.inFlight < this.maxInFlight)
        this.send(h.script, h.keys, h.args, h.done, h.tag, h.operations);
      else this.refuse(h);
    }
  }

  /** Counts a refusal and answers it from a macrotask, with the others of this turn. */
  private refuse(held: Held): void {
    this.stats.refused++;
    held.err = this.refusal();
    this.health.failed(held.err);
    if (this.refusals.push(held) === 1) realSetImmediate(this.deliverNow);
  }

  private deliver(): void {
    const refusals = this.refusals;
    this.refusals = [];
    for (const r of refusals) r.done(r.tag, undefined, true, r.err);
  }

  /** What to do about a client that never connected. */
  private hint(): string {
    return this.adapter.kind === 'node-redis' ? ' (a node-redis client connects when client.connect() is called)' : '';
  }

  private refusal(): SluiceError {
    return new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      this.adapter.ready()
        ? `${this.owner}: ${this.inFlight} script calls unanswered ('maxInFlight' ${this.maxInFlight}); refusing more until Redis answers`
        : this.connected
          ? `${this.owner}: the Redis client is not connected`
          : `${this.owner}: the Redis client did not connect within 'connectTimeoutMs' ${this.connectTimeoutMs}${this.hint()}`,
    );
  }

  /** A call's answer, unless it has timed out meanwhile. */
  private settle<T>(call: Call<T>, reply: unknown, failed: boolean, err: unknown): void {
    this.inFlight--;
    if (call.settled) {
      if (!failed) this.stats.late++;
      return;
    }
    this.deadlines.settle(call, this.inFlight);
    if (failed) {
      this.stats.errors++;
      this.health.failed(err);
    } else if (this.health.troubled) this.health.answered();
    call.done(call.tag, reply, failed, err);
  }

  /** FCALL for a library where functions are allowed, else EVALSHA; a plain command as itself. */
  private invoke(script: Command, keys: string[], args: Arg[]): Promise<unknown> {
    const { adapter } = this;
    try {
      if (isPlain(script)) return adapter.command(script, keys, args);
      const functions = this.functions ? adapter.functions : undefined;
      return functions !== undefined && isLibrary(script)
        ? functions.fcall(script.fn, keys, args)
        : adapter.evalsha(script.sha, keys, args);
    } catch (err) {
      return Promise.reject(err); // a client that throws instead of rejecting still gets the failure policy
    }
  }

  /**
   * The one retry a failed call gets, or undefined for none. A missing script (NOSCRIPT) or function
   * ("Function not found": a restarted or new server, a failover, a flush) is reloaded, with one EVAL or
   * a FUNCTION LOAD on every master (loadEverywhere), and the call retried once. A server or ACL that does
   * not allow functions turns this connection to EVALSHA for good. No other error is retried.
   * `sentAsFunction`: whether the call went as FCALL, whatever the connection has turned to since.
   */
  private recover(
    script: Command,
    err: unknown,
    keys: string[],
    args: Arg[],
    sentAsFunction: boolean,
  ): Promise<unknown> | undefined {
    if (isPlain(script)) return undefined;
    const { adapter, stats } = this;
    const why = message(err);
    const functions = sentAsFunction ? adapter.functions : undefined;
    if (functions === undefined || !isLibrary(script)) {
      if (!why.startsWith('NOSCRIPT')) return undefined;
      stats.reloads++;
      return adapter.eval(script.source, keys, args);
    }
    if (FUNCTIONS_REFUSED.test(why)) return this.withoutFunctions(script, keys, args);
    if (!FUNCTION_MISSING.test(why)) return undefined;
    stats.reloads++;
    return this.loadFunction(script.library, script.fn).then(
      () => functions.fcall(script.fn, keys, args),
      (loadErr: unknown) => {
        if (FUNCTIONS_REFUSED.test(message(loadErr))) return this.withoutFunctions(script, keys, args);
        throw loadErr;
      },
    );
  }

  /**
   * After a late reply that said the script or its function is missing: loads it (SCRIPT LOAD or
   * FUNCTION LOAD on every server behind the client) without running the call again. Failures are only
   * counted: the next call that finds it missing in time recovers as usual.
   */
  private loadLate(script: Command, err: unknown, sentAsFunction: boolean): void {
    if (isPlain(script)) return;
    const why = message(err);
    const asFunction = sentAsFunction && this.adapter.functions !== undefined && isLibrary(script);
    if (asFunction ? !FUNCTION_MISSING.test(why) : !why.startsWith('NOSCRIPT')) return;
    this.stats.reloads++;
    const loading = asFunction
      ? this.loadFunction(script.library, script.fn)
      : this.onEveryServer(['SCRIPT', 'LOAD', script.source]);
    loading.catch(() => this.stats.errors++);
  }

  /** FUNCTION LOAD of `library` (function `fn`) on every server, once at a time however many calls ask. */
  private loadFunction(library: string, fn: string): Promise<unknown> {
    let loading = this.loading.get(fn);
    if (loading === undefined) {
      const done = () => this.loading.delete(fn);
      loading = this.loadEverywhere(library).then(done, (loadErr: unknown) => {
        done();
        throw loadErr;
      });
      this.loading.set(fn, loading);
    }
    return loading;
  }

  /**
   * FUNCTION LOAD of `library` on every server behind the client: a cluster's call goes to the master of
   * its slot, so every master needs the library, and one that lost it (a new master, a failover to a
   * replica without it, a flush) says so only when a call reaches it. A server that already has it is fine.
   */
  private loadEverywhere(library: string): Promise<void> {
    return this.onEveryServer(['FUNCTION', 'LOAD', library]);
  }

  /** Sends `command` to every server behind the client (each master of a cluster); "already exists" is fine. */
  private async onEveryServer(command: string[]): Promise<void> {
    const servers = await this.adapter.servers();
    if (servers.length === 0)
      throw new SluiceError(
        'ERR_SLUICE_STORE_UNAVAILABLE',
        `${this.owner}: the Redis client named no server to load the ${command[0] === 'SCRIPT' ? 'script' : 'function library'} on`,
      );
    const load = async (server: ServerCommand): Promise<void> => {
      try {
        await server.send(command);
      } catch (err) {
        if (!LIBRARY_EXISTS.test(message(err))) throw err; // loaded meanwhile by another call or process: fine
      }
    };
    await Promise.all(servers.map(load));
  }

  private withoutFunctions(script: Script, keys: string[], args: Arg[]): Promise<unknown> {
    this.functions = false;
    const { adapter, stats } = this;
    return adapter.evalsha(script.sha, keys, args).catch((err: unknown) => {
      if (!message(err).startsWith('NOSCRIPT')) throw err;
      stats.reloads++;
      return adapter.eval(script.source, keys, args);
    });
  }
}

export interface Settlers {
  resolve(reply: unknown): void;
  reject(err: unknown): void;
}

/** The Done of `run`: settles the Promise whose resolve and reject are the tag. */
export function settlePromise(p: Settlers, reply: unknown, failed: boolean, err: unknown): void {
  if (failed) p.reject(err);
  else p.resolve(reply);
}
