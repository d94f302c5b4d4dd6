// A Durable Object namespace in plain JS: one ObjectEngine per object name on a Map-backed storage whose
// every call is asynchronous and structured-clones what it keeps, and stubs that clone requests and replies
// as RPC does. Enough to test the store and the engine on Node; test/cloudflare/miniflare.test.ts runs the
// same in workerd.
import { ObjectEngine, type ObjectRequest, type ObjectStorage } from '../../src/cloudflare/engine.js';
import type { SluiceNamespace, SluiceObjectStub } from '../../src/cloudflare/store.js';

export class FakeStorage implements ObjectStorage {
  readonly data = new Map<string, unknown>();
  alarm: number | null = null;
  gets = 0;

  private async tick(): Promise<void> {
    await new Promise((r) => setImmediate(r));
  }

  async get<T>(key: string): Promise<T | undefined> {
    this.gets++;
    await this.tick();
    const v = this.data.get(key);
    return v === undefined ? undefined : (structuredClone(v) as T);
  }

  async put<T>(key: string, value: T): Promise<void> {
    this.data.set(key, structuredClone(value));
  }

  async delete(key: string): Promise<boolean> {
    return this.data.delete(key);
  }

  async list<T>(options: { prefix?: string; start?: string; limit?: number }): Promise<Map<string, T>> {
    await this.tick();
    const keys = [...this.data.keys()]
      .filter((k) => k.startsWith(options.prefix ?? '') && (options.start === undefined || k >= options.start))
      .sort();
    const out = new Map<string, T>();
    for (const k of keys.slice(0, options.limit ?? Infinity)) out.set(k, structuredClone(this.data.get(k)) as T);
    return out;
  }

  async getAlarm(): Promise<number | null> {
    return this.alarm;
  }

  async setAlarm(at: number): Promise<void> {
    this.alarm = at;
  }
}

export class FakeNamespace implements SluiceNamespace {
  readonly storages = new Map<string, FakeStorage>();
  readonly engines = new Map<string, ObjectEngine>();
  wall = 1_000_000;
  readonly wallClock = () => this.wall;

  idFromName(name: string): string {
    return name;
  }

  engine(name: string): ObjectEngine {
    let e = this.engines.get(name);
    if (e === undefined) {
      let s = this.storages.get(name);
      if (s === undefined) this.storages.set(name, (s = new FakeStorage()));
      this.engines.set(name, (e = new ObjectEngine(s, this.wallClock)));
    }
    return e;
  }

  /** Runs an object's alarm as the runtime does: the alarm is spent as it fires; the handler may set another. */
  async fireAlarm(name: string): Promise<void> {
    this.storages.get(name)!.alarm = null;
    await this.engine(name).alarm();
  }

  /** Drops every object's memory, as an eviction does; storage stays. */
  evictAll(): void {
    this.engines.clear();
  }

  get(id: never): SluiceObjectStub {
    const name = id as string;
    const call =
      <T>(f: (e: ObjectEngine, r: ObjectRequest) => Promise<T>) =>
      async (r: ObjectRequest) =>
        structuredClone(await f(this.engine(name), structuredClone(r)));
    return {
      decide: call((e, r) => e.decide(r)),
      adjust: call((e, r) => e.adjust(r)),
      release: call((e, r) => e.release(r)),
      reset: call((e, r) => e.reset(r)),
    };
  }
}
