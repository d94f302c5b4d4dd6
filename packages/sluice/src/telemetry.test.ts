// OpenTelemetry metrics through the SDK's in-memory exporter: decisions counted by policy and outcome,
// store calls timed, on a memory store and an asynchronous one; no telemetry, no wrapper.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as api from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';
import { AsyncStore } from '../test/contracts/http-adapter.js';
import { Limiter } from './limiter.js';
import { MemoryStore } from './stores/memory.js';
import { openTelemetry, setTelemetry } from './telemetry.js';

function sdk() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // The reader exports on forceFlush(); its interval never elapses within a test.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const read = async (name: string) => {
    await reader.forceFlush();
    const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    exporter.reset();
    return all.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints as DataPoint<unknown>[]);
  };
  return { provider, read };
}

const by = (points: DataPoint<unknown>[]) =>
  points.map((p) => [p.attributes, p.value]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

test('decisions are counted by deciding policy and outcome; store calls timed, by store; peeks are not decisions', async () => {
  const { provider, read } = sdk();
  const telemetry = openTelemetry(api, { meter: provider.getMeter('sluice') });
  const t = { now: 1_800_000_000_000 };
  const limiter = new Limiter({
    policies: [
      { name: 'burst', algorithm: 'token-bucket', limit: 2, window: '1s' },
      { name: 'hourly', algorithm: 'fixed-window', limit: 100, window: '1h' },
    ],
    clock: () => t.now,
    telemetry,
  });
  for (let i = 0; i < 3; i++) limiter.limitSync('a');
  await limiter.limit('b');
  await limiter.get('a');
  assert.deepEqual(by(await read('sluice.decisions')), [
    [{ 'sluice.outcome': 'allowed', 'sluice.policy': 'burst' }, 3],
    [{ 'sluice.outcome': 'limited', 'sluice.policy': 'burst' }, 1],
  ]);
  const timed = await read('sluice.store.duration');
  assert.equal(timed.length, 1);
  assert.deepEqual(timed[0]!.attributes, { 'sluice.store': 'memory', 'sluice.operation': 'decide' });
  assert.equal((timed[0]!.value as Histogram).count, 5, 'every store call is timed, the peek too');
  await provider.shutdown();
});

test('an asynchronous store is timed when its Promise settles, and a failing one is timed with error.type', async () => {
  const { provider, read } = sdk();
  const telemetry = openTelemetry(api, { meter: provider.getMeter('sluice') });
  const limiter = new Limiter({
    policy: { name: 'p', algorithm: 'gcra', limit: 1, window: '1m' },
    store: new AsyncStore(),
    telemetry,
  });
  assert.equal((await limiter.limit('k')).allowed, true);
  assert.equal((await limiter.limit('k')).allowed, false);
  assert.deepEqual(by(await read('sluice.decisions')), [
    [{ 'sluice.outcome': 'allowed', 'sluice.policy': 'p' }, 1],
    [{ 'sluice.outcome': 'limited', 'sluice.policy': 'p' }, 1],
  ]);
  const failing = new Limiter({
    policy: { name: 'p', algorithm: 'gcra', limit: 1, window: '1m' },
    store: {
      bind: () => ({
        sync: false,
        decide: () => Promise.reject(new TypeError('down')),
        adjust: async () => assert.fail(),
        release: async () => false,
        reset: async () => {},
      }),
    },
    telemetry,
  });
  await assert.rejects(failing.limit('k'), /down/);
  const points = await read('sluice.store.duration');
  const failed = points.find((p) => p.attributes['error.type'] !== undefined)!;
  assert.deepEqual(failed.attributes, {
    'sluice.store': 'custom',
    'sluice.operation': 'decide',
    'error.type': 'TypeError',
  });
  await provider.shutdown();
});

test('setTelemetry reaches limiters built afterwards through the global MeterProvider; openTelemetry() loads the API itself', async () => {
  const { provider, read } = sdk();
  api.metrics.setGlobalMeterProvider(provider);
  try {
    setTelemetry(await openTelemetry());
    const limiter = new Limiter({ policy: { name: 'g', algorithm: 'sliding-window', limit: 5, window: '1m' } });
    limiter.limitSync('x');
    setTelemetry(undefined);
    const plain = new Limiter({ policy: { name: 'g', algorithm: 'sliding-window', limit: 5, window: '1m' } });
    plain.limitSync('y');
    assert.deepEqual(by(await read('sluice.decisions')), [[{ 'sluice.outcome': 'allowed', 'sluice.policy': 'g' }, 1]]);
  } finally {
    setTelemetry(undefined);
    api.metrics.disable();
    await provider.shutdown();
  }
});

test("without telemetry the limiter decides on the store's own table; bad telemetry is an error naming it", () => {
  const store = new MemoryStore();
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, store });
  assert.equal(
    Object.getPrototypeOf(limiter.table),
    Object.getPrototypeOf(store.bind({ policies: limiter.policies, algorithms: [], clock: () => 0 } as never)),
  );
  assert.throws(() => new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: '1m' }, telemetry: {} as never }), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'telemetry' must be what openTelemetry\(\) returns, got/,
  });
  assert.throws(() => openTelemetry({} as never), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /openTelemetry\(\) takes the @opentelemetry\/api module/,
  });
});

test("the service counts each rule's decisions under its rule id", async () => {
  const { parseConfig } = await import('../../serve/src/server/config/config.js');
  const { RuleSet } = await import('../../serve/src/server/config/rules.js');
  const { RateLimitService } = await import('../../serve/src/server/service.js');
  const { provider, read } = sdk();
  const telemetry = openTelemetry(api, { meter: provider.getMeter('sluice') });
  const store = new MemoryStore();
  const config = parseConfig([
    {
      file: 'd.yaml',
      text: 'domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    },
  ]);
  const svc = new RateLimitService(new RuleSet(config, { store, telemetry }), { store, localCache: false, telemetry });
  for (let i = 0; i < 2; i++)
    await svc.shouldRateLimit({
      domain: 'd',
      descriptors: [{ entries: [{ key: 'user', value: 'ann' }] }],
      hitsAddend: 1,
    });
  assert.deepEqual(by(await read('sluice.decisions')), [
    [{ 'sluice.outcome': 'allowed', 'sluice.policy': 'd.user' }, 1],
    [{ 'sluice.outcome': 'limited', 'sluice.policy': 'd.user' }, 1],
  ]);
  await provider.shutdown();
});
