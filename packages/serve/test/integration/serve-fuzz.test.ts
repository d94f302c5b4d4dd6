// Whatever a client sends, the service answers with a decision or a 4xx naming the problem, and keeps
// serving: random JSON, deep JSON and random byte strings against /json, /v1/check, the nginx endpoint's
// headers and gRPC, with nothing logged above warn (issue 28: deep JSON answered 500).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';
import { post, rlsClient, start, TempConfig } from './serve-helpers.js';
import type { LogSink } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const cfg = new TempConfig(`domain: fz
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 5, algorithm: gcra }
http_descriptors:
  - [{ key: k, header: X-K }]
`);
let svc: RunningService;
let logs: LogSink;
before(async () => {
  ({ svc, logs } = await start(cfg.path, { name: 'memory', settings: {} }));
});
after(async () => {
  await svc.close();
  cfg.remove();
});

/** Pino's levels: 40 is warn. */
function nothingAboveWarn(): void {
  const loud = logs.lines.filter((l) => (l.level as number) > 40);
  assert.deepEqual(loud, [], 'nothing logged above warn');
}

/** JSON text nested `depth` deep in a random mix of lists and objects, with a request's fields about. */
const nested = fc
  .tuple(
    fc.integer({ min: 1, max: 20_000 }),
    fc.array(fc.constantFrom('[', '{"domain":', '{"descriptors":', '{"entries":', '{"key":', '{"value":'), {
      minLength: 1,
      maxLength: 6,
    }),
  )
  .map(([depth, opens]) => {
    let open = '';
    let close = '';
    for (let i = 0; i < depth; i++) {
      const o = opens[i % opens.length]!;
      open += o;
      close = (o === '[' ? ']' : '}') + close;
    }
    return `${open}1${close}`;
  });

// Values shaped like requests (so decoding gets deep), mixed with anything JSON can hold.
const entry = fc.record(
  { key: fc.oneof(fc.constant('k'), fc.string()), value: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) },
  { requiredKeys: [] },
);
const descriptor = fc.record(
  {
    entries: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.jsonValue()),
    limit: fc.oneof(
      fc.jsonValue(),
      fc.record({
        requests_per_unit: fc.integer(),
        unit: fc.oneof(fc.constantFrom('SECOND', 'HOUR', 'week'), fc.integer()),
      }),
    ),
    hits_addend: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
  },
  { requiredKeys: [] },
);
const request = fc.record(
  {
    domain: fc.oneof(fc.constant('fz'), fc.string(), fc.integer()),
    descriptors: fc.oneof(fc.array(descriptor, { maxLength: 3 }), fc.jsonValue()),
    hits_addend: fc.oneof(fc.integer({ min: -5, max: 10 }), fc.string()),
    key: fc.string(),
    cost: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.double()),
  },
  { requiredKeys: [] },
);

test('HTTP: every body gets 200, 429 or a 4xx with an error message', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(request, fc.jsonValue()), fc.constantFrom('/json', '/v1/check'), async (body, path) => {
      const r = await post(svc.httpPort, path, JSON.stringify(body));
      assert.ok([200, 400, 429].includes(r.status), `${r.status} for ${JSON.stringify(body)}`);
      if (r.status === 400) assert.equal(typeof r.json.error, 'string');
    }),
    { numRuns: 300 },
  );
  const raw = await fetch(`http://127.0.0.1:${svc.httpPort}/json`, {
    method: 'POST',
    body: new Uint8Array([0xff, 0xfe, 0x00, 0x7b]),
  });
  assert.equal(raw.status, 400);
  nothingAboveWarn();
});

test('HTTP: deep JSON (up to 20,000 levels) and arbitrary bytes get a 400 or a decision, never a 500', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        nested,
        fc.jsonValue({ maxDepth: 12 }).map((v) => JSON.stringify(v)),
        fc.uint8Array({ maxLength: 512 }),
      ),
      fc.constantFrom('/json', '/v1/check'),
      async (body, path) => {
        const res = await fetch(`http://127.0.0.1:${svc.httpPort}${path}`, {
          method: 'POST',
          body: typeof body === 'string' ? body : Buffer.from(body),
        });
        const text = await res.text();
        assert.ok(
          [200, 400, 413, 429].includes(res.status),
          `${res.status} ${text.slice(0, 200)} for ${String(body).slice(0, 200)}`,
        );
        if (res.status === 400) assert.equal(typeof JSON.parse(text).error, 'string');
      },
    ),
    { numRuns: 300 },
  );
  nothingAboveWarn();
});

test('nginx auth_request: arbitrary header values and domains get 200, 403 or a 4xx, never a 500', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.string({ maxLength: 5000 }), fc.stringMatching(/^[\x21-\x7e]{0,6000}$/)),
      fc.oneof(fc.constant('fz'), fc.string({ maxLength: 20 })),
      async (value, domain) => {
        const headers = new Headers();
        try {
          headers.set('x-k', value);
        } catch {
          return; // not a value an HTTP client can send at all
        }
        const res = await fetch(`http://127.0.0.1:${svc.httpPort}/nginx/${encodeURIComponent(domain)}`, { headers });
        await res.text();
        assert.ok(
          [200, 400, 403, 404, 431].includes(res.status),
          `${res.status} for ${JSON.stringify(value.slice(0, 100))} on ${JSON.stringify(domain)}`,
        );
      },
    ),
    { numRuns: 200 },
  );
  nothingAboveWarn();
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
    // Requests that decode, with long and many values: a decision or INVALID_ARGUMENT naming the bound.
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(fc.record({ key: fc.oneof(fc.constant('k'), fc.string()), value: fc.string({ maxLength: 5000 }) }), {
            maxLength: 40,
          }),
          { maxLength: 70 },
        ),
        fc.nat(20),
        async (lists, hits) => {
          await client
            .call({ domain: 'fz', descriptors: lists.map((entries) => ({ entries })), hits_addend: hits })
            .then(
              () => {},
              (e: grpc.ServiceError) => assert.equal(e.code, grpc.status.INVALID_ARGUMENT, e.details),
            );
        },
      ),
      { numRuns: 100 },
    );
    const ok = await client.call({ domain: 'fz', descriptors: [{ entries: [{ key: 'k', value: 'still-alive' }] }] });
    assert.equal(ok.overall_code, 'OK');
    nothingAboveWarn();
  } finally {
    client.close();
  }
});
