/**
 * DurableObjectStore: the store a Limiter takes inside a Worker. Each key's decision runs in a
 * SluiceDurableObject (one object per key, or per shard of keys), which applies sluice's own algorithms
 * to its storage; the Worker only sends the key, the cost and the policies.
 *
 * @example
 * // wrangler: durable_objects.bindings = [{ name = "SLUICE", class_name = "SluiceDurableObject" }]
 * export { SluiceDurableObject } from 'sluice/cloudflare';
 * const limiter = new Limiter({ policy, store: new DurableObjectStore({ namespace: env.SLUICE }) });
 */
import { SluiceError, show } from '../core/index.js';
import type { Decision, Policy } from '../core/index.js';
import { check } from '../core/option-checks.js';
import { sha256 } from '../crypto/sha256.js';
import { encodeBase64url } from '../crypto/base64url.js';
import { utf8 } from '../runtime.js';
import type { Store, StoreTable, TableSpec } from '../stores/store.js';
import type { ObjectRequest } from './engine.js';

/** The RPC methods of a SluiceDurableObject, as its stub exposes them. */
export interface SluiceObjectStub {
  decide(request: ObjectRequest): Promise<Decision>;
  adjust(request: ObjectRequest): Promise<Decision>;
  release(request: ObjectRequest): Promise<boolean>;
  reset(request: ObjectRequest): Promise<void>;
}

/** The part of a DurableObjectNamespace binding (env.SLUICE) the store uses. */
export interface SluiceNamespace {
  idFromName(name: string): unknown;
  get(id: never): SluiceObjectStub;
}

export interface DurableObjectStoreOptions {
  /** The binding of the SluiceDurableObject class, e.g. `env.SLUICE`. */
  namespace: SluiceNamespace;
  /**
   * Spread keys over this many objects (by a hash of the key) instead of one object per key: fewer
   * objects, each deciding its keys one at a time. Default: one object per key.
   */
  shards?: number;
  /** Or name the object of each key yourself (e.g. one per tenant). Give `shards` or this, not both. */
  objectName?: (key: string) => string;
  /**
   * Whose time decides. 'object' (default): the object's own clock, so Workers in every location agree.
   * 'client': the limiter's clock is sent with every call (for tests that inject a clock).
   */
  clock?: 'object' | 'client';
}

const KNOWN = new Set(['namespace', 'shards', 'objectName', 'clock']);
/** Object ids kept for reuse; beyond this many the cache starts over (an id is cheap to derive again). */
const ID_CACHE = 4096;

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `DurableObjectStore ${message}`);
}

export class DurableObjectStore implements Store {
  readonly namespace: SluiceNamespace;
  readonly shards: number | undefined;
  readonly clock: 'object' | 'client';
  private readonly objectName: ((key: string) => string) | undefined;
  /** Ids by object name. Ids, not stubs: a stub belongs to the request that made it, and a Worker's next request cannot use it. */
  private readonly ids = new Map<string, unknown>();

  constructor(options: DurableObjectStoreOptions) {
    if (typeof options !== 'object' || options === null)
      invalid(`options must be an object such as { namespace: env.SLUICE }, got ${show(options)}`);
    for (const field of Object.keys(options)) {
      if (!KNOWN.has(field)) invalid(`unknown option '${field}'; known options are ${[...KNOWN].join(', ')}`);
    }
    const ns = options.namespace;
    if (typeof ns !== 'object' || ns === null || typeof ns.idFromName !== 'function' || typeof ns.get !== 'function') {
      invalid(
        `'namespace' must be a Durable Object namespace binding (env.<NAME>) of SluiceDurableObject, got ${show(ns)}`,
      );
    }
    if (options.shards !== undefined) check.positiveInteger(options.shards, "DurableObjectStore 'shards'");
    if (options.objectName !== undefined)
      check.function(options.objectName, "DurableObjectStore 'objectName'", { note: 'from key to object name' });
    if (options.shards !== undefined && options.objectName !== undefined)
      invalid(`give 'shards' or 'objectName', not both`);
    const clock = options.clock ?? 'object';
    check.oneOf(clock, ['object', 'client'], "DurableObjectStore 'clock'");
    this.namespace = ns;
    this.shards = options.shards;
    this.objectName = options.objectName;
    this.clock = clock;
  }

  bind(spec: TableSpec): StoreTable {
    return new DurableObjectTable(this, spec);
  }

  /** The name of the object that decides `key`. */
  nameOf(key: string): string {
    if (this.objectName !== undefined) {
      const name = this.objectName(key);
      if (typeof name !== 'string' || name.length === 0)
        invalid(`'objectName' must return a non-empty string, got ${show(name)} for key ${show(key)}`);
      return name;
    }
    if (this.shards === undefined) return `key:${key}`;
    const h = sha256(utf8(key));
    const n = ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
    return `shard:${n % this.shards}`;
  }

  stubOf(key: string): SluiceObjectStub {
    const name = this.nameOf(key);
    let id = this.ids.get(name);
    if (id === undefined) {
      if (this.ids.size >= ID_CACHE) this.ids.clear();
      id = this.namespace.idFromName(name);
      this.ids.set(name, id);
    }
    return this.namespace.get(id as never);
  }
}

class DurableObjectTable implements StoreTable {
  readonly sync = false;
  private readonly store: DurableObjectStore;
  private readonly spec: TableSpec;
  private readonly policies: readonly Policy[];
  /** A digest of the policies: names this table's rows, so limiters sharing a key keep apart. */
  private readonly id: string;

  constructor(store: DurableObjectStore, spec: TableSpec) {
    this.store = store;
    this.spec = spec;
    // Plain copies: what crosses RPC is structured-cloned, and the digest must not depend on field order.
    this.policies = spec.policies.map((p) => ({ ...p }));
    this.id = encodeBase64url(sha256(utf8(JSON.stringify(this.policies)))).slice(0, 16);
  }

  private request(key: string, cost: number, leaseId: string | undefined): ObjectRequest {
    return {
      table: this.id,
      policies: this.policies,
      key,
      cost,
      leaseId,
      now: this.store.clock === 'client' ? this.spec.clock() : undefined,
    };
  }

  decide(key: string, cost: number, leaseId: string | undefined): Promise<Decision> {
    return this.call(key, (s) => s.decide(this.request(key, cost, leaseId)));
  }

  adjust(key: string, delta: number): Promise<Decision> {
    return this.call(key, (s) => s.adjust(this.request(key, delta, undefined)));
  }

  release(key: string, leaseId: string): Promise<boolean> {
    return this.call(key, (s) => s.release(this.request(key, 0, leaseId)));
  }

  reset(key: string): Promise<void> {
    return this.call(key, (s) => s.reset(this.request(key, 0, undefined)));
  }

  private async call<T>(key: string, f: (stub: SluiceObjectStub) => Promise<T>): Promise<T> {
    const stub = this.store.stubOf(key);
    try {
      return await f(stub);
    } catch (e) {
      if (e instanceof SluiceError) throw e;
      const error = new SluiceError(
        'ERR_SLUICE_STORE_UNAVAILABLE',
        `DurableObjectStore: the object ${show(this.store.nameOf(key))} did not answer for key ${show(key)}: ${e instanceof Error ? e.message : show(e)}`,
      );
      (error as { cause?: unknown }).cause = e;
      throw error;
    }
  }
}
