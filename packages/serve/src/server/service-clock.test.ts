// The service keeps one time, its clock (ServiceOptions.clock): the reset a rule of requests_per_unit 0
// answers with, the local cache's denials and Envoy's wire answer over gRPC all read it. Each read
// Date.now() or the monotonic clock before, so a test (or an operator's --clock) that set the service's
// time saw answers made on another one. Time here is a manual clock far from the real one.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { test } from 'node:test';
import { loadSync } from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/proto-loader';
import pino from 'pino';
import { PROTO_ROOT, RLS_PROTO } from '../../test/support/rls-definition.js';
import { method } from '../../test/support/rls-reference.js';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import type { RlsResponse } from './codecs/rls-types.js';
import { parseConfig } from './config/config.js';
import { RuleSet } from './config/rules.js';
import { createGrpcServer, SHOULD_RATE_LIMIT_PATH } from './endpoints/grpc.js';
import { RateLimitService } from './service.js';

/** A whole hour, far from today (2027-01-15): an answer made on Date.now() cannot pass for one made on it. */
const HOUR = 1_800_000_000_000 - (1_800_000_000_000 % 3_600_000);

const CONFIG = `domain: d
descriptors:
  - key: blocked
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: hourly
    rate_limit: { unit: hour, requests_per_unit: 100 }
`;

function service(start: number, localCache = false) {
  const c = { now: start };
  const clock = () => c.now;
  const store = new MemoryStore();
  const svc = new RateLimitService(new RuleSet(parseConfig([{ file: 'd.yaml', text: CONFIG }]), { store, clock }), {
    store,
    localCache,
    clock,
  });
  const ask = (key: string, value: string) =>
    svc.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key, value }] }], hitsAddend: 1 }) as RlsResponse;
  return { c, svc, ask };
}

test("service clock: a requests_per_unit 0 rule's reset is the end of the unit by the service's clock, not Date.now()'s", () => {
  const { c, ask } = service(HOUR + 15_000);
  const a = ask('blocked', 'x');
  assert.equal(a.overallCode, 'OVER_LIMIT');
  assert.equal(a.statuses[0]!.durationUntilResetMs, 45_000);
  c.now = HOUR + 59_999;
  assert.equal(ask('blocked', 'x').statuses[0]!.durationUntilResetMs, 1);
});

test("service clock: the local cache's denials run on the service's clock (it denied past the reset when that clock moved on and the monotonic one did not)", () => {
  const { c, ask } = service(HOUR, true);
  assert.equal(ask('user', 'ann').overallCode, 'OK');
  const over = ask('user', 'ann');
  assert.equal(over.overallCode, 'OVER_LIMIT');
  assert.equal(over.statuses[0]!.durationUntilResetMs, 60_000);
  c.now = HOUR + 59_500;
  const cached = ask('user', 'ann');
  assert.equal(cached.overallCode, 'OVER_LIMIT');
  assert.equal(cached.statuses[0]!.durationUntilResetMs, 500, 'what is left of the window, by the service clock');
  c.now = HOUR + 60_000;
  assert.equal(ask('user', 'ann').overallCode, 'OK', 'a new window: the cached denial has run out');
});

test("service clock: Envoy's wire answer over gRPC (--answers envoy) counts duration_until_reset on the service's clock", async () => {
  const { svc } = service(HOUR + 20 * 60_000 + 500);
  const server = createGrpcServer({
    service: () => svc,
    log: pino({ level: 'silent' }),
    maxMessageBytes: 1024,
    serving: async () => true,
    envoyWire: { headers: undefined },
  });
  const port = await server.listen('127.0.0.1', 0);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const message = method.requestSerialize({
      domain: 'd',
      descriptors: [{ entries: [{ key: 'hourly', value: 'h' }] }],
    });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    const body = await new Promise<Buffer>((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': SHOULD_RATE_LIMIT_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      req.on('data', (b: Buffer) => chunks.push(b));
      req.on('error', reject);
      req.on('close', () => resolve(Buffer.concat(chunks)));
      req.end(Buffer.concat([prefix, message]));
    });
    const answer = decodeResponse(body.subarray(5)) as {
      statuses: { duration_until_reset: { seconds: number } | null }[];
    };
    // Envoy's reset: the unit less the time into it, 20 minutes and half a second into the hour.
    assert.equal(answer.statuses[0]!.duration_until_reset?.seconds, 3600 - 20 * 60);
  } finally {
    session.close();
    await server.close();
  }
});

const decodeResponse = (
  loadSync(RLS_PROTO, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  })['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition
).ShouldRateLimit!.responseDeserialize;
