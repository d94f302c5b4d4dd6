/**
 * OpenTelemetry metrics, optional. sluice never imports `@opentelemetry/api` on its own: you hand it the
 * API (`openTelemetry(api)`), or let `openTelemetry()` load it, and give the result to a Limiter
 * (`telemetry`) or to every Limiter built afterwards (`setTelemetry`). A limiter without telemetry runs
 * exactly the code it ran before: the instrumented table replaces the store's table only when asked for.
 *
 * Instruments (there is no general OpenTelemetry convention for rate limiters; these follow the shape of
 * the stable `aspnetcore.rate_limiting.requests`, namespaced `sluice.`):
 * - `sluice.decisions`, a Counter of `{decision}`, by `sluice.policy` (the deciding policy) and
 *   `sluice.outcome` ('allowed' or 'limited'), with `sluice.reason` when a decision was not the policies'
 *   own ('store-error', 'store-full', 'blocked', ...);
 * - `sluice.store.duration`, a Histogram in seconds of each decision's store call, by `sluice.store`
 *   ('memory', 'redis', ...) and `sluice.operation` ('decide'), with `error.type` when the call failed.
 */
import { monotonicClock } from './clock.js';
import { SluiceError, show } from './core/errors.js';
import type { Algorithm, Decision } from './core/types.js';
import type { StoreTable } from './stores/store.js';

/** The parts of `@opentelemetry/api` sluice uses, structurally (so sluice's types never need the package). */
export interface OpenTelemetryApi {
  readonly metrics: { getMeter(name: string, version?: string): OpenTelemetryMeter };
}
export interface OpenTelemetryMeter {
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { add(value: number, attributes?: Attributes): void };
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): { record(value: number, attributes?: Attributes): void };
}
type Attributes = Record<string, string>;

/** Where a limiter's decisions are reported: build one with `openTelemetry()`. */
export interface Telemetry {
  /** The table that counts and times the decisions of `table`, a table of a `store` (its name in metrics). */
  instrument(table: StoreTable, store: string): StoreTable;
}

const METER = 'sluice';
/** Store calls from well under a microsecond (memory) to a slow network (Redis), in seconds. */
const STORE_BUCKETS = [
  0.000_001, 0.000_005, 0.000_025, 0.000_1, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

class OpenTelemetryMetrics implements Telemetry {
  private readonly decisions: ReturnType<OpenTelemetryMeter['createCounter']>;
  private readonly duration: ReturnType<OpenTelemetryMeter['createHistogram']>;
  /** Attribute sets by policy: [allowed, limited], built once, so a decision allocates none. */
  private readonly byPolicy = new Map<string, [Attributes, Attributes]>();

  constructor(meter: OpenTelemetryMeter) {
    this.decisions = meter.createCounter('sluice.decisions', {
      unit: '{decision}',
      description: 'Rate-limit decisions, by deciding policy and outcome.',
    });
    this.duration = meter.createHistogram('sluice.store.duration', {
      unit: 's',
      description: 'Duration of the store call behind each rate-limit decision.',
      advice: { explicitBucketBoundaries: STORE_BUCKETS },
    });
  }

  instrument(table: StoreTable, store: string): StoreTable {
    const timing = { 'sluice.store': store, 'sluice.operation': 'decide' };
    const record = (d: Decision, t0: number, cost: number): Decision => {
      this.duration.record((monotonicClock() - t0) / 1000, timing);
      if (cost > 0) this.count(d); // a peek (limiter.get, cost 0) is no decision
      return d;
    };
    const failed = (e: unknown, t0: number): never => {
      this.duration.record((monotonicClock() - t0) / 1000, {
        ...timing,
        'error.type': e instanceof SluiceError ? e.code : e instanceof Error ? e.name : 'unknown',
      });
      throw e;
    };
    const timed = (t0: number, cost: number, run: () => Decision | Promise<Decision>): Decision | Promise<Decision> => {
      let r: Decision | Promise<Decision>;
      try {
        r = run();
      } catch (e) {
        return failed(e, t0);
      }
      if (r instanceof Promise)
        return r.then(
          (d) => record(d, t0, cost),
          (e: unknown) => failed(e, t0),
        );
      return record(r, t0, cost);
    };
    // The wrapped table's own members (a strategy's stats, close()) stay reachable through the prototype.
    const out: StoreTable = Object.create(table) as StoreTable;
    Object.assign(out, {
      decide: (key: string, cost: number, leaseId: string | undefined) =>
        timed(monotonicClock(), cost, () => table.decide(key, cost, leaseId)),
      adjust: (key: string, delta: number) => table.adjust(key, delta),
      release: (key: string, leaseId: string) => table.release(key, leaseId),
      reset: (key: string) => table.reset(key),
    });
    // Called on the table itself: through the prototype it would run with the wrapper as `this`.
    if (table.close !== undefined) out.close = () => table.close!();
    const decideWith = table.decideWith;
    if (decideWith !== undefined) {
      out.decideWith = (key: string, cost: number, leaseId: string | undefined, algorithms: readonly Algorithm[]) =>
        timed(monotonicClock(), cost, () => decideWith.call(table, key, cost, leaseId, algorithms));
    }
    return out;
  }

  private count(d: Decision): void {
    if (d.reason !== undefined) {
      this.decisions.add(1, {
        'sluice.policy': d.policy,
        'sluice.outcome': d.allowed ? 'allowed' : 'limited',
        'sluice.reason': d.reason,
      });
      return;
    }
    let sets = this.byPolicy.get(d.policy);
    if (sets === undefined) {
      sets = [
        { 'sluice.policy': d.policy, 'sluice.outcome': 'allowed' },
        { 'sluice.policy': d.policy, 'sluice.outcome': 'limited' },
      ];
      this.byPolicy.set(d.policy, sets);
    }
    this.decisions.add(1, sets[d.allowed ? 0 : 1]);
  }
}

/**
 * Telemetry reporting to OpenTelemetry through the meter `sluice` of the global MeterProvider (or of
 * `options.meter`). Pass the API module you import (`import * as api from '@opentelemetry/api'`), or
 * nothing to have it loaded here; it rejects with ERR_SLUICE_OPENTELEMETRY_MISSING when the package is
 * not installed.
 */
export function openTelemetry(api: OpenTelemetryApi, options?: { meter?: OpenTelemetryMeter }): Telemetry;
export function openTelemetry(): Promise<Telemetry>;
export function openTelemetry(
  api?: OpenTelemetryApi,
  options: { meter?: OpenTelemetryMeter } = {},
): Telemetry | Promise<Telemetry> {
  if (api === undefined) return loadOpenTelemetry().then((a) => openTelemetry(a));
  if (typeof api !== 'object' || api === null || typeof api.metrics?.getMeter !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `openTelemetry() takes the @opentelemetry/api module (import * as api from '@opentelemetry/api'), got ${show(api)}`,
    );
  }
  return new OpenTelemetryMetrics(options.meter ?? api.metrics.getMeter(METER));
}

/** Imports @opentelemetry/api if it is installed. The specifier is a variable, so bundlers leave it alone. */
export async function loadOpenTelemetry(): Promise<OpenTelemetryApi> {
  const name = '@opentelemetry/api';
  try {
    return (await import(name)) as OpenTelemetryApi;
  } catch (e) {
    throw new SluiceError(
      'ERR_SLUICE_OPENTELEMETRY_MISSING',
      `OpenTelemetry metrics need the optional package @opentelemetry/api (npm install @opentelemetry/api): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

let globalTelemetry: Telemetry | undefined;

/** Telemetry for every Limiter built after this call that has no `telemetry` of its own; undefined stops it. */
export function setTelemetry(telemetry: Telemetry | undefined): void {
  if (telemetry !== undefined && typeof telemetry?.instrument !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `setTelemetry() takes what openTelemetry() returns, or undefined, got ${show(telemetry)}`,
    );
  }
  globalTelemetry = telemetry;
}

/** The telemetry set by setTelemetry(), if any. */
export function currentTelemetry(): Telemetry | undefined {
  return globalTelemetry;
}
