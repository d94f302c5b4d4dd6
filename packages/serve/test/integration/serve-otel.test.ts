// `sluice serve` reports to OpenTelemetry by itself when @opentelemetry/api is installed and a
// MeterProvider is registered (here in process, as auto-instrumentation would), and loads nothing otherwise.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as api from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { post, start, TempConfig } from './serve-helpers.js';

const CONFIG = 'domain: web\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n';

test('with a registered MeterProvider the service counts decisions by rule and outcome; without one it logs no OpenTelemetry', async () => {
  const config = new TempConfig(CONFIG);
  const plain = await start(config.path, { name: 'memory store', settings: {} });
  try {
    assert.ok(!plain.logs.lines.some((l) => String(l.msg).includes('OpenTelemetry')), 'no provider: no telemetry');
  } finally {
    await plain.svc.close();
  }
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  api.metrics.setGlobalMeterProvider(provider);
  const { svc, logs } = await start(config.path, { name: 'memory store', settings: {} });
  try {
    assert.ok(logs.lines.some((l) => String(l.msg).startsWith('OpenTelemetry metrics on')));
    const body = { domain: 'web', descriptors: [{ entries: [{ key: 'user', value: 'ann' }] }] };
    assert.deepEqual(
      [(await post(svc.httpPort, '/json', body)).status, (await post(svc.httpPort, '/json', body)).status],
      [200, 429],
    );
    await reader.forceFlush();
    const points = exporter
      .getMetrics()
      .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
      .filter((m) => m.descriptor.name === 'sluice.decisions')
      .flatMap((m) =>
        m.dataPoints.map((p) => [p.attributes['sluice.policy'], p.attributes['sluice.outcome'], p.value]),
      );
    assert.deepEqual(points.sort(), [
      ['web.user', 'allowed', 1],
      ['web.user', 'limited', 1],
    ]);
  } finally {
    await svc.close();
    api.metrics.disable();
    await provider.shutdown();
    config.remove();
  }
});
