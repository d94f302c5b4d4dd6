// Whatever a client sends, the service answers with a decision or a 4xx naming the problem, and keeps
// serving: random JSON and random byte strings against /json, /v1/check and gRPC.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';
import { post, rlsClient, start, TempConfig } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const cfg = new TempConfig(`domain: fz
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 5, algorithm: gcra }
`);
let svc: RunningService;
before(async () => {
  svc = (await start(cfg.path, { name: 'memory', settings: {} })).svc;
});
after(async () => {
  await svc.close();
  cfg.remove();
});

// Values shaped like requests (so decoding gets deep), mixed with anything JSON can hold.
const entry = fc.record({ key: fc.oneof(fc.constant('k'), fc.string()), value: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) }, { requiredKeys: [] });
const descriptor = fc.record({ entries: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.jsonValue()), limit: fc.oneof(fc.jsonValue(), fc.record({ requests_per_unit: fc.integer(), unit: fc.oneof(fc.constantFrom('SECOND', 'HOUR', 'week'), fc.integer()) })), hits_addend: fc.oneof(fc.integer(), fc.string(), fc.constant(null)) }, { requiredKeys: [] });
const request = fc.record({ domain: fc.oneof(fc.constant('fz'), fc.string(), fc.integer()), descriptors: fc.oneof(fc.array(descriptor, { maxLength: 3 }), fc.jsonValue()), hits_addend: fc.oneof(fc.integer({ min: -5, max: 10 }), fc.string()), key: fc.string(), cost: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.double()) }, { requiredKeys: [] });

test('HTTP: every body gets 200, 429 or a 4xx with an error message', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(request, fc.jsonValue()), fc.constantFrom('/json', '/v1/check'), async (body, path) => {
      const r = await post(svc.httpPort, path, JSON.stringify(body));
      assert.ok([200, 400, 429].includes(r.status), `${r.status} for ${JSON.stringify(body)}`);
      if (r.status === 400) assert.equal(typeof r.json.error, 'string');
    }),
    { numRuns: 300 },
  );
  const raw = await fetch(`http://127.0.0.1:${svc.httpPort}/json`, { method: 'POST', body: new Uint8Array([0xff, 0xfe, 0x00, 0x7b]) });
  assert.equal(raw.status, 400);
});

test('gRPC: random bytes and random requests get an answer or INVALID_ARGUMENT', async () => {
  const client = rlsClient(svc.grpcPort!);
  try {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        await client.raw(Buffer.from(bytes)).then(
          () => {},
          (e: grpc.ServiceError) => assert.equal(e.code, grpc.status.INVALID_ARGUMENT, e.details),
        );
      }),
      { numRuns: 200 },
    );
    const ok = await client.call({ domain: 'fz', descriptors: [{ entries: [{ key: 'k', value: 'still-alive' }] }] });
    assert.equal(ok.overall_code, 'OK');
  } finally {
    client.close();
  }
});
