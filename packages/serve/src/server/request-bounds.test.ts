// What a request may hold is checked once (codecs/rls-request.ts's checkRequest, run by the service on every
// request, and its count checks run early by the JSON decoders), so every transport refuses a request past
// a bound with the same words. Before, /json said one thing or another depending on whether its fast
// scanner took the body, and gRPC said the fast scanner's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { method } from '../../test/support/rls-reference.js';
import type { WireRequest } from '../../test/support/rls-reference.js';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import { decodeCheck, decodeRlsJson, decodeRlsJsonFast } from './codecs/json-codec.js';
import { decodeRateLimitRequest } from './codecs/rls-proto.js';
import { checkRequest } from './codecs/rls-request.js';
import { BadRequest } from './codecs/rls-types.js';
import type { RlsRequest } from './codecs/rls-types.js';
import { parseConfig } from './config/config.js';
import { RuleSet } from './config/rules.js';
import { RateLimitService } from './service.js';

const CONFIG = `domain: d
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;

function service(strictDomains = false): RateLimitService {
  const store = new MemoryStore();
  return new RateLimitService(new RuleSet(parseConfig([{ file: 'd.yaml', text: CONFIG }]), { store }), {
    store,
    localCache: false,
    strictDomains,
  });
}

/** The message a request decoded by `decode` is refused with: by the decoder, or else by the service. */
function refusal(decode: () => RlsRequest | undefined, svc = service()): string {
  try {
    const req = decode();
    assert.ok(req !== undefined, 'the decoder took the body');
    svc.shouldRateLimit(req);
  } catch (e) {
    assert.ok(e instanceof BadRequest, String(e));
    return e.message;
  }
  assert.fail('the request was answered');
}

const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: 'v' }));

/** One request past a bound, as /json's compact body, as the same body spread out (the full decoder), and as protobuf. */
function everyTransport(domain: string, descriptors: { key: string; value: string }[][]): Map<string, string> {
  const wire: WireRequest = { domain, descriptors: descriptors.map((e) => ({ entries: e })) };
  const compact = JSON.stringify({ domain, descriptors: descriptors.map((e) => ({ entries: e })) });
  const spread = JSON.stringify(JSON.parse(compact), null, 2);
  return new Map([
    ['/json, fast scanner', refusal(() => decodeRlsJsonFast(compact))],
    ['/json, full decoder', refusal(() => decodeRlsJson(JSON.parse(spread)))],
    ['gRPC', refusal(() => decodeRateLimitRequest(method.requestSerialize(wire)))],
  ]);
}

test('descriptor bounds are checked once: 65 descriptors get the same refusal on every transport (gRPC and the /json fast scanner said "the request holds 65 descriptors")', () => {
  for (const domain of ['d', 'unknown']) {
    const said = everyTransport(
      domain,
      Array.from({ length: 65 }, () => entries(1)),
    );
    for (const [path, text] of said)
      assert.equal(text, `'descriptors' holds 65 descriptors; a request holds at most 64`, `${path}, domain ${domain}`);
  }
});

test('descriptor bounds are checked once: 33 entries get the same refusal on every transport', () => {
  for (const [path, text] of everyTransport('d', [entries(1), entries(33)]))
    assert.equal(text, `'descriptors[1].entries' holds 33 entries; a descriptor holds at most 32`, path);
});

test('descriptor bounds are checked once: a 4097-character value gets the same refusal on every transport', () => {
  const said = everyTransport('d', [[{ key: 'k', value: 'x'.repeat(4097) }]]);
  for (const [path, text] of said)
    assert.equal(text, `descriptors[0].entries[0]: 'value' is 4097 characters long; at most 4096`, path);
});

test('/v1/check names its own fields, through the same check', () => {
  const tooMany = { domain: 'd', descriptors: Array.from({ length: 65 }, () => ({ k: 'v' })) };
  assert.equal(
    refusal(() => decodeCheck(tooMany, undefined)),
    `'descriptors' holds 65 descriptors; a request holds at most 64`,
  );
  const wide = { domain: 'd', descriptors: [Object.fromEntries(entries(33).map((e) => [e.key, e.value]))] };
  assert.equal(
    refusal(() => decodeCheck(wide, undefined)),
    `'descriptors[0]' holds 33 entries; a descriptor holds at most 32`,
  );
  const long = { domain: 'd', key: 'x'.repeat(4097) };
  assert.equal(
    refusal(() => decodeCheck(long, undefined)),
    `descriptors[0].entries[0]: 'value' is 4097 characters long; at most 4096`,
  );
});

test('checkRequest: empty parts and hits past a uint32, named', () => {
  const one = (e: { key: string; value: string }[], hitsAddend = 0): RlsRequest => ({
    domain: 'd',
    descriptors: [{ entries: e }],
    hitsAddend,
  });
  const message = (r: RlsRequest) => {
    try {
      checkRequest(r);
    } catch (e) {
      assert.ok(e instanceof BadRequest, String(e));
      return e.message;
    }
    return undefined;
  };
  assert.equal(message({ domain: 'd', descriptors: [], hitsAddend: 0 }), `'descriptors' must not be empty`);
  assert.equal(message(one([])), `descriptors[0]: 'entries' must not be empty`);
  assert.equal(message(one([{ key: '', value: 'v' }])), `descriptors[0].entries[0]: 'key' must not be empty`);
  assert.equal(message(one([{ key: 'k', value: '' }])), `descriptors[0].entries[0]: 'value' must not be empty`);
  assert.equal(
    message(one([{ key: 'k', value: 'v' }], 2 ** 32)),
    `descriptors[0].hits_addend is 4294967296; at most 4294967295 (Envoy's hits_addend is a uint32)`,
  );
  assert.equal(message(one([{ key: 'k', value: 'v' }], 2 ** 32 - 1)), undefined);
});
