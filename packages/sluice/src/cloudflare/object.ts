/**
 * SluiceDurableObject: the Durable Object class a Worker exports so that DurableObjectStore can decide in
 * it. Its methods are called over RPC (it extends the runtime's DurableObject); the work is ObjectEngine's.
 *
 * @example
 * // worker.ts
 * export { SluiceDurableObject } from 'sluice/cloudflare';
 * // wrangler.jsonc
 * // "durable_objects": { "bindings": [{ "name": "SLUICE", "class_name": "SluiceDurableObject" }] },
 * // "migrations": [{ "tag": "v1", "new_sqlite_classes": ["SluiceDurableObject"] }]
 */
import { DurableObject } from 'cloudflare:workers';
import type { Decision } from '../core/index.js';
import { ObjectEngine, type ObjectRequest, type ObjectStorage } from './engine.js';

/** The part of DurableObjectState the class uses. */
interface ObjectState {
  readonly storage: ObjectStorage;
  blockConcurrencyWhile<T>(f: () => Promise<T>): Promise<T>;
}

export class SluiceDurableObject extends DurableObject {
  private readonly engine: ObjectEngine;

  constructor(ctx: unknown, env: unknown) {
    super(ctx, env);
    const state = ctx as ObjectState;
    this.engine = new ObjectEngine(state.storage);
    // Nothing is decided before the object knows whether an alarm is pending.
    void state.blockConcurrencyWhile(() => this.engine.start());
  }

  decide(request: ObjectRequest): Promise<Decision> {
    return this.engine.decide(request);
  }

  adjust(request: ObjectRequest): Promise<Decision> {
    return this.engine.adjust(request);
  }

  release(request: ObjectRequest): Promise<boolean> {
    return this.engine.release(request);
  }

  reset(request: ObjectRequest): Promise<void> {
    return this.engine.reset(request);
  }

  alarm(): Promise<void> {
    return this.engine.alarm();
  }
}
