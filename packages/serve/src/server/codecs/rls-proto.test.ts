// rls-proto.ts replaces protobufjs (through @grpc/proto-loader) plus fromWire/toWire on the gRPC path, so
// the reference model here is that pipeline as it was: proto-loader's ShouldRateLimit (de)serializers and
// grpc.ts's fromWire and toWire (test/support/rls-reference.ts). Every well-formed request must decode to what the reference gives,
// or to the same BadRequest; every answer must read back, in any proto3 reader, as the reference's does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { loadSync } from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/proto-loader';
import { PROTO_ROOT, RLS_PROTO } from '../../../test/support/rls-definition.js';
import { fromWire, method, toWire, TYPICAL_ANSWER } from '../../../test/support/rls-reference.js';
import { envoyAnswer } from '../../../test/support/envoy-reference.js';
import type { EnvoyWire } from './envoy-wire.js';
import type { WireRequest } from '../../../test/support/rls-reference.js';
import type { UnitName } from './rls-types.js';
import { BadRequest } from './rls-types.js';
import type { DescriptorStatus, RlsResponse } from './rls-types.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from './rls-proto.js';

/**
 * The answer read back with proto3's defaults filled in. proto-loader's own (defaults: false) tells a zero
 * written on the wire from one left out, which no proto3 reader does (Envoy's included): toWire sets zeros,
 * protobufjs writes them, and the codec leaves them out.
 */
const readAnswer = (
  loadSync(RLS_PROTO, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  })['envoy.service.ratelimit.v3.RateLimitService'] as ServiceDefinition
).ShouldRateLimit!.responseDeserialize;

// --- helpers ------------------------------------------------------------------------------------------------

type Outcome = { ok: unknown } | { bad: string };

/** What a decode gives: the value, or a BadRequest's message. Anything else thrown fails the test. */
function outcome(decode: () => unknown): Outcome {
  try {
    return { ok: decode() };
  } catch (e) {
    if (e instanceof BadRequest) return { bad: e.message };
    throw e;
  }
}

/** The reference: protobufjs, then fromWire. Bytes protobufjs cannot read are a failure here, not a BadRequest. */
function reference(bytes: Uint8Array): Outcome {
  return outcome(() => fromWire(method.requestDeserialize(Buffer.from(bytes)) as WireRequest));
}

function mine(bytes: Uint8Array): Outcome {
  return outcome(() => decodeRateLimitRequest(bytes));
}

function varint(v: bigint | number): Buffer {
  let n = BigInt.asUintN(64, BigInt(v)); // an int32 enum below 0 goes as its 64-bit two's complement
  const out: number[] = [];
  for (; n >= 0x80n; n >>= 7n) out.push(Number(n & 0x7fn) | 0x80);
  out.push(Number(n));
  return Buffer.from(out);
}

const tag = (field: number, wire: number) => varint(field * 8 + wire);
const lengthDelimited = (field: number, body: Uint8Array) => Buffer.concat([tag(field, 2), varint(body.length), body]);
const bytes = (hex: string) => Buffer.from(hex.replace(/\s+/g, ''), 'hex');

function malformedMessage(input: Uint8Array): string {
  const o = mine(input);
  assert.ok('bad' in o, `expected a BadRequest for ${Buffer.from(input).toString('hex')}, got ${JSON.stringify(o)}`);
  return o.bad;
}

// --- arbitraries --------------------------------------------------------------------------------------------

const text = fc.oneof(
  fc.constant(''),
  fc.constantFrom('remote_address', '10.0.0.1', 'bench', 'ünïcødé', '日本語', '😀 x'),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 50 }), // past 40 characters protobufjs encodes through Buffer
);
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 2 ** 31, 4294967295), fc.integer({ min: 0, max: 4294967295 }));
const unitNames = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'] as const;
/** By name, or by number (int32): 7 and up and below 0 have no name. Mostly valid, so most requests decode. */
const wireUnit = fc.oneof(
  { arbitrary: fc.constantFrom(...unitNames.slice(1)), weight: 6 },
  fc.constantFrom(...unitNames),
  fc.integer({ min: -1, max: 8 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
);
/** uint64 values as protobufjs takes them (numbers): small, at 2^53's edge, and above it up to 2^64. */
const wireUint64 = fc.oneof(
  { arbitrary: fc.nat(1000), weight: 5 },
  fc.integer({ min: 2 ** 53 - 1000, max: 2 ** 53 - 1 }),
  fc.constantFrom(0, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 1.5e19, 18446744073709549568),
  fc
    .bigInt({ min: 0n, max: 2n ** 64n - 1n })
    .map(Number)
    .filter((n) => n < 2 ** 64),
);
const wireRequest = fc.record(
  {
    domain: text,
    descriptors: fc.array(
      fc.record(
        {
          entries: fc.array(fc.record({ key: text, value: text }, { requiredKeys: [] }), { maxLength: 3 }),
          limit: fc.option(fc.record({ requests_per_unit: uint32, unit: wireUnit }, { requiredKeys: [] })),
          hits_addend: fc.option(fc.record({ value: wireUint64 }, { requiredKeys: [] })),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 4 },
    ),
    hits_addend: uint32,
  },
  { requiredKeys: ['descriptors'] },
);

/**
 * A message as a list of fields in any order, repeated or not, some of them unknown to the decoder: encoded
 * with and without the unknown ones, the decoders must not tell the two apart.
 */
type Field = { unknown: boolean; bytes: Buffer } | { field: number; children: Field[] };

function encode(fields: readonly Field[], withUnknown: boolean): Buffer {
  const parts: Buffer[] = [];
  for (const f of fields) {
    if ('children' in f) parts.push(lengthDelimited(f.field, encode(f.children, withUnknown)));
    else if (!f.unknown || withUnknown) parts.push(f.bytes);
  }
  return Buffer.concat(parts);
}

const known = (bytes: Buffer): Field => ({ unknown: false, bytes });
const stringField = (field: number) => text.map((s) => known(lengthDelimited(field, Buffer.from(s))));
const varintField = (field: number, values: fc.Arbitrary<number | bigint>) =>
  values.map((v) => known(Buffer.concat([tag(field, 0), varint(v)])));
/** Any field numbered above the message's own, of every wire type proto3 uses. */
const unknownField = (above: number): fc.Arbitrary<Field> =>
  fc
    .tuple(
      fc.oneof(fc.integer({ min: above + 1, max: above + 20 }), fc.integer({ min: above + 1, max: 2 ** 29 - 1 })),
      fc.oneof(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => [0, varint(v)] as const),
        fc.uint8Array({ minLength: 8, maxLength: 8 }).map((b) => [1, Buffer.from(b)] as const),
        fc.uint8Array({ maxLength: 16 }).map((b) => [2, Buffer.concat([varint(b.length), b])] as const),
        fc.uint8Array({ minLength: 4, maxLength: 4 }).map((b) => [5, Buffer.from(b)] as const),
      ),
    )
    .map(([field, [wire, payload]]) => ({ unknown: true, bytes: Buffer.concat([tag(field, wire), payload]) }));
const message = (field: number, members: fc.Arbitrary<Field>[], maxLength: number) =>
  fc.array(fc.oneof(...members), { maxLength }).map((children): Field => ({ field, children }));

const entryFields = message(1, [stringField(1), stringField(2), unknownField(2)], 4);
const overrideFields = message(
  2,
  [varintField(1, uint32), varintField(2, fc.integer({ min: -2, max: 8 })), unknownField(2)],
  3,
);
const hitsFields = message(
  3,
  [
    varintField(
      1,
      fc.oneof(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.integer({ min: 2 ** 53 - 3, max: 2 ** 53 - 1 }),
        fc.nat(10),
      ),
    ),
    unknownField(1),
  ],
  2,
);
const descriptorFields = message(2, [entryFields, overrideFields, hitsFields, unknownField(3)], 6);
const requestFields = fc.array(
  fc.oneof(stringField(1), { arbitrary: descriptorFields, weight: 2 }, varintField(3, uint32), unknownField(3)),
  { maxLength: 6 },
);

const responseUnit = fc.constantFrom<UnitName | 'UNKNOWN'>(...unitNames);
const status: fc.Arbitrary<DescriptorStatus> = fc.record({
  code: fc.constantFrom('OK' as const, 'OVER_LIMIT' as const),
  currentLimit: fc.option(
    fc.record({ name: text, requestsPerUnit: uint32, unit: responseUnit, header: fc.constant('') }),
    { nil: undefined },
  ),
  limitRemaining: uint32,
  durationUntilResetMs: fc.oneof(
    fc.constantFrom(0, 1, 999, 1000, 1001, 60_000, 4294967295000),
    fc.nat(10_000_000),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  ),
  rule: fc.constant(undefined),
  shadow: fc.boolean(),
});
const response: fc.Arbitrary<RlsResponse> = fc.record({
  overallCode: fc.constantFrom('OK' as const, 'OVER_LIMIT' as const),
  statuses: fc.array(status, { maxLength: 4 }),
  headers: fc.array(fc.tuple(text, text), { maxLength: 4 }),
  retryAfterMs: fc.nat(),
});

/** toWire's object as canonical proto3 has it: zero numbers, UNKNOWN enums and empty strings left out. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v))
    if (x !== 0 && x !== '' && x !== 'UNKNOWN' && x !== null && x !== undefined) out[k] = canonical(x);
  return out;
}

// --- properties ---------------------------------------------------------------------------------------------

test('any request protobufjs encodes decodes as protobufjs + fromWire decode it, or to the same BadRequest', () => {
  fc.assert(
    fc.property(wireRequest, (w) => {
      const b = method.requestSerialize(w);
      assert.deepEqual(mine(b), reference(b));
    }),
    { numRuns: 20_000 },
  );
});

test('unknown fields of every wire type, at every level, are skipped; fields repeat and interleave as protobufjs reads them', () => {
  fc.assert(
    fc.property(requestFields, (fields) => {
      const withUnknown = encode(fields, true);
      const without = encode(fields, false);
      const got = mine(withUnknown);
      assert.deepEqual(got, mine(without));
      assert.deepEqual(got, reference(withUnknown));
      assert.deepEqual(got, reference(without));
    }),
    { numRuns: 20_000 },
  );
});

test('any answer reads back as protobufjs encoding toWire(answer) does, in canonical proto3 bytes', () => {
  fc.assert(
    fc.property(response, (r) => {
      const got = encodeRateLimitResponse(r);
      assert.deepEqual(readAnswer(got), readAnswer(method.responseSerialize(toWire(r))));
      // protobufjs writes fields in number order too: with toWire's zeros left out, the very same bytes.
      assert.equal(got.toString('hex'), method.responseSerialize(canonical(toWire(r))).toString('hex'));
    }),
    { numRuns: 20_000 },
  );
});

test("Envoy's answer (--answers envoy): the very bytes of encoding envoyAnswer's copy of the answer, for any answer, header names and time", () => {
  // Every kind of status envoy-wire.ts tells apart: over or not, in shadow or quota mode, with a limit of any
  // unit (UNKNOWN and WEEK too) or none.
  const envoyStatus = fc
    .tuple(
      status,
      fc.constantFrom(undefined, 'within' as const, 'over' as const),
      fc.constantFrom<UnitName | 'UNKNOWN'>(...unitNames, 'WEEK'),
    )
    .map(([s, quota, unit]): DescriptorStatus => {
      const currentLimit = s.currentLimit === undefined ? undefined : { ...s.currentLimit, unit };
      return quota === undefined ? { ...s, currentLimit } : { ...s, currentLimit, quota };
    });
  const envoyResponse = fc.record({
    overallCode: fc.constantFrom('OK' as const, 'OVER_LIMIT' as const),
    statuses: fc.array(envoyStatus, { maxLength: 5 }),
    headers: fc.array(fc.tuple(text, text), { maxLength: 2 }),
    retryAfterMs: fc.nat(),
  });
  const wire: fc.Arbitrary<EnvoyWire> = fc.oneof(
    fc.constant({ headers: undefined }),
    fc.record({ headers: fc.record({ limit: text, remaining: text, reset: text }) }),
  );
  const now = fc.oneof(
    fc.constantFrom(0, 999, 1000, 1_800_000_000_000, 1_800_000_123_456),
    fc.integer({ min: 1_700_000_000_000, max: 2_000_000_000_000 }),
    fc.nat(),
  );
  fc.assert(
    fc.property(envoyResponse, wire, now, (r, w, nowMs) => {
      const expected = encodeRateLimitResponse(envoyAnswer(r, w, nowMs)).toString('hex');
      assert.equal(encodeRateLimitResponse(r, 0, w, nowMs).toString('hex'), expected);
      assert.equal(encodeRateLimitResponse(r, 5, w, nowMs).subarray(5).toString('hex'), expected);
    }),
    { numRuns: 20_000 },
  );
});

test('any bytes decode or throw BadRequest, never anything else, and never hang', () => {
  const valid = wireRequest.map((w) => method.requestSerialize(w));
  const mangled = fc
    .tuple(valid, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }), fc.nat())
    .map(([b, edits, cut]) => {
      const out = Buffer.from(b);
      for (const [at, value] of edits) if (out.length > 0) out[at % out.length] = value;
      return out.subarray(0, out.length === 0 ? 0 : cut % (out.length + 1));
    });
  const started = Date.now();
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), mangled), (b) => {
      mine(b); // throws (and fails the property) on anything but BadRequest
    }),
    { numRuns: 50_000 },
  );
  assert.ok(Date.now() - started < 60_000, 'decoding 50 000 short inputs took over a minute');
});

// --- pinned cases -------------------------------------------------------------------------------------------

test('golden: the bench request', () => {
  const b = bytes(
    '0a 05 62 65 6e 63 68 12 1c 0a 1a 0a 0e 72 65 6d 6f 74 65 5f 61 64 64 72 65 73 73 12 08 31 30 2e 30 2e 30 2e 31',
  );
  const expected = {
    domain: 'bench',
    descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }], limit: undefined, hitsAddend: undefined }],
    hitsAddend: 0,
  };
  assert.deepEqual(decodeRateLimitRequest(b), expected);
  assert.deepEqual(reference(b), { ok: expected });
  // A plain Uint8Array (not a Buffer) decodes the same.
  assert.deepEqual(decodeRateLimitRequest(new Uint8Array(b)), expected);
});

test('kept names: a domain or key read again, or past the kept ones, decodes as read the first time; __proto__ too', () => {
  const request = (domain: string, key: string) =>
    Buffer.concat([
      lengthDelimited(1, Buffer.from(domain)),
      lengthDelimited(
        2,
        lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from(key)), lengthDelimited(2, Buffer.from('v'))])),
      ),
    ]);
  const names = [
    '__proto__',
    'constructor',
    'bench',
    'x'.repeat(64),
    'y'.repeat(65),
    'ünïcødé',
    ...Array.from({ length: 20 }, (_, i) => `d${i}`),
  ];
  for (let round = 0; round < 3; round++) {
    for (const [i, domain] of names.entries()) {
      const b = request(domain, names[(i + round) % names.length]!);
      assert.deepEqual(mine(b), reference(b));
      assert.equal(decodeRateLimitRequest(b).domain, domain);
    }
  }
});

test('kept limits: a limit answered with again, or past the kept ones, is written as protobufjs writes it', () => {
  const limits = Array.from({ length: 20 }, (_, i) => ({
    name: i % 3 === 0 ? '' : `rule ${i} ünïcødé`,
    requestsPerUnit: i * 1000,
    unit: (['SECOND', 'MINUTE', 'HOUR', 'UNKNOWN'] as const)[i % 4]!,
    header: '',
  }));
  const answer = (currentLimit: (typeof limits)[number]): RlsResponse => ({
    overallCode: 'OK',
    statuses: [{ code: 'OK', currentLimit, limitRemaining: 7, durationUntilResetMs: 1500, rule: 'r', shadow: false }],
    headers: [],
    retryAfterMs: 0,
  });
  for (let round = 0; round < 3; round++) {
    for (const [i, l] of limits.entries()) {
      const expected = method.responseSerialize(canonical(toWire(answer(l)))).toString('hex');
      assert.equal(encodeRateLimitResponse(answer(l)).toString('hex'), expected, `limit ${i}, round ${round}`);
      assert.equal(encodeRateLimitResponse(answer(l)).toString('hex'), expected, `limit ${i} again`);
    }
  }
});

test('golden: a typical OK answer', () => {
  const r = TYPICAL_ANSWER;
  // statuses { code OK, current_limit { 1000, MINUTE }, remaining 999, duration { 59 s, 500 000 000 ns } }
  const status = '12 16 0801 1205 08e807 1002 18e707 2208 083b 1080cab5ee01';
  const headers =
    '1a22 0a0f 526174654c696d69742d4c696d6974 120f 313030302c20313030303b773d3630 1a1a 0a13 526174654c696d69742d52656d61696e696e67 1203 393939 1a15 0a0f 526174654c696d69742d5265736574 1202 3630';
  assert.equal(encodeRateLimitResponse(r).toString('hex'), bytes(`0801 ${status} ${headers}`).toString('hex'));
  // With headroom for the gRPC prefix: the same bytes after the gap, which is left to the caller.
  const withRoom = encodeRateLimitResponse(r, 5);
  assert.equal(withRoom.length, encodeRateLimitResponse(r).length + 5);
  assert.equal(withRoom.subarray(5).toString('hex'), bytes(`0801 ${status} ${headers}`).toString('hex'));
});

test('malformed bytes: each case names what is wrong and where', () => {
  const cases: [string, string][] = [
    ['18 80', 'truncated varint at byte 1'],
    ['', ''], // nothing at all is the empty message, not malformed
    ['18 ff ff ff ff ff ff ff ff ff ff 01', 'varint longer than 10 bytes at byte 1'],
    ['0a 05 61', "field 1's length 5 runs past the end of its message at byte 1"],
    ['0a ff ff ff ff 0f', "field 1's length 4294967295 runs past the end of its message at byte 1"],
    ['0a 8080808010', "field 1's length of 2^32 or more runs past the end of its message at byte 1"],
    // A field inside a descriptor may not run past the descriptor, though the request goes on.
    ['12 03 0a 05 0a 61 62 63 64', "field 1's length 5 runs past the end of its message at byte 3"],
    ['12 02 0a', "field 2's length 2 runs past the end of its message at byte 1"],
    ['2b 08 01 2c', 'field 5 has wire type 3, which proto3 does not use at byte 0'],
    ['2c', 'field 5 has wire type 4, which proto3 does not use at byte 0'],
    ['2e', 'field 5 has wire type 6, which proto3 does not use at byte 0'],
    ['2f', 'field 5 has wire type 7, which proto3 does not use at byte 0'],
    ['08 01', 'field 1 has wire type 0, not its own at byte 0'],
    ['0a 01 61 1a 00', 'field 3 has wire type 2, not its own at byte 3'],
    ['12 02 08 01', 'field 1 has wire type 0, not its own at byte 2'],
    ['12 04 0a 02 10 01', 'field 2 has wire type 0, not its own at byte 4'],
    ['12 03 12 01 0a', 'field 1 has wire type 2, not its own at byte 4'],
    ['12 03 1a 01 0d', 'field 1 has wire type 5, not its own at byte 4'],
    ['21 01 02 03', "field 4's 8-byte value runs past the end of its message at byte 0"],
    ['25 01 02 03', "field 4's 4-byte value runs past the end of its message at byte 0"],
    ['12 05 21 01 02 03 04 05 06 07 08', "field 4's 8-byte value runs past the end of its message at byte 2"],
  ];
  for (const [hex, what] of cases) {
    if (what === '') {
      assert.deepEqual(decodeRateLimitRequest(bytes(hex)), { domain: '', descriptors: [], hitsAddend: 0 });
      continue;
    }
    assert.equal(malformedMessage(bytes(hex)), `malformed RateLimitRequest: ${what}`, hex);
  }
});

test('invalid values: the BadRequest fromWire throws, after the whole message decoded', () => {
  /** A request of one descriptor with a limit override of these bytes. */
  const limit = (override: string) => lengthDelimited(2, lengthDelimited(2, bytes(override)));
  const unitMessage = (got: string) =>
    `descriptors[0].limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${got}`;
  const cases: [Buffer, string][] = [
    [limit(''), unitMessage('UNKNOWN')], // limit present, unit absent
    [limit('10 00'), unitMessage('UNKNOWN')],
    [limit('08 05'), unitMessage('UNKNOWN')],
    [limit('10 07'), unitMessage('7')], // a number protobufjs has no name for stays a number
    [limit('10 ff ff ff ff ff ff ff ff ff 01'), unitMessage('-1')],
    [limit('10 ff ff ff ff 0f'), unitMessage('-1')], // int32: the low 32 bits
    [
      lengthDelimited(2, lengthDelimited(3, Buffer.concat([tag(1, 0), varint(2n ** 64n - 1n)]))),
      'descriptors[0].hits_addend is too large: 18446744073709552000',
    ],
    [
      lengthDelimited(2, lengthDelimited(3, Buffer.concat([tag(1, 0), varint(2 ** 53)]))),
      'descriptors[0].hits_addend is too large: 9007199254740992',
    ],
    [
      lengthDelimited(2, lengthDelimited(3, Buffer.concat([tag(1, 0), varint(2n ** 53n + 1n)]))),
      'descriptors[0].hits_addend is too large: 9007199254740992',
    ],
  ];
  for (const [b, message] of cases) {
    assert.deepEqual(mine(b), { bad: message }, b.toString('hex'));
    assert.deepEqual(reference(b), { bad: message }, b.toString('hex'));
  }
  // 2^53 - 1 is still exact.
  const edge = lengthDelimited(2, lengthDelimited(3, Buffer.concat([tag(1, 0), varint(2 ** 53 - 1)])));
  assert.deepEqual(mine(edge), {
    ok: { domain: '', descriptors: [{ entries: [], limit: undefined, hitsAddend: 2 ** 53 - 1 }], hitsAddend: 0 },
  });
  assert.deepEqual(mine(edge), reference(edge));
  // Present with no value is 0; absent is undefined.
  assert.deepEqual(mine(bytes('12 02 1a 00')), {
    ok: { domain: '', descriptors: [{ entries: [], limit: undefined, hitsAddend: 0 }], hitsAddend: 0 },
  });

  // The first invalid descriptor is the one named; in one descriptor, the unit before the hits (fromWire's
  // order), wherever each sits on the wire.
  const badUnit = lengthDelimited(2, bytes('10 07'));
  const tooMany = lengthDelimited(3, Buffer.concat([tag(1, 0), varint(2 ** 60)]));
  const first = Buffer.concat([lengthDelimited(2, Buffer.concat([tooMany, badUnit])), lengthDelimited(2, badUnit)]);
  assert.deepEqual(mine(first), { bad: unitMessage('7') });
  assert.deepEqual(mine(first), reference(first));
  const second = Buffer.concat([lengthDelimited(2, bytes('')), lengthDelimited(2, tooMany)]);
  assert.deepEqual(mine(second), { bad: 'descriptors[1].hits_addend is too large: 1152921504606847000' });
  assert.deepEqual(mine(second), reference(second));
  // Malformed bytes after an invalid value: protobufjs threw before fromWire ever ran.
  assert.equal(
    malformedMessage(Buffer.concat([lengthDelimited(2, badUnit), bytes('18')])),
    'malformed RateLimitRequest: truncated varint at byte 7',
  );
});

test('a singular field that repeats: the last scalar wins, and the last embedded message wins whole (as protobufjs, not merged)', () => {
  const b = Buffer.concat([
    lengthDelimited(1, Buffer.from('first')),
    lengthDelimited(
      2,
      Buffer.concat([
        lengthDelimited(2, bytes('08 05 10 01')),
        lengthDelimited(1, bytes('0a 01 6b 0a 01 4b 12 01 76')),
        lengthDelimited(2, bytes('10 02')),
        lengthDelimited(3, bytes('08 09')),
        lengthDelimited(3, bytes('')),
      ]),
    ),
    bytes('18 03'),
    lengthDelimited(1, Buffer.from('last')),
    bytes('18 04'),
  ]);
  const expected = {
    domain: 'last',
    descriptors: [
      { entries: [{ key: 'K', value: 'v' }], limit: { requestsPerUnit: 0, unit: 'MINUTE' }, hitsAddend: 0 },
    ],
    hitsAddend: 4,
  };
  assert.deepEqual(mine(b), { ok: expected });
  assert.deepEqual(reference(b), { ok: expected });
});

test('where protobufjs is lax, the codec is strict', () => {
  // protobufjs skips a group, truncates a string running past the buffer, and reads a known field whatever
  // its wire type; each of these was answered as a request before.
  for (const hex of ['0a 01 61 2b 08 01 2c', '0a 05 61', '08 01']) {
    assert.ok('ok' in reference(bytes(hex)), hex);
    assert.ok('bad' in mine(bytes(hex)), hex);
  }
  // Field number 0 is skipped as unknown, as protobufjs does.
  assert.deepEqual(mine(bytes('00 01 0a 01 61')), reference(bytes('00 01 0a 01 61')));
  // A 6-byte varint for a uint32 is read as what it says; protobufjs skips a fixed 5 bytes past the 5th.
  assert.deepEqual(mine(bytes('18 81 80 80 80 80 00')), { ok: { domain: '', descriptors: [], hitsAddend: 1 } });
});

test('strings: invalid UTF-8 decodes as Buffer decodes it; a lone surrogate encodes as U+FFFD', () => {
  for (const raw of ['ff', 'c3', 'ed a0 80', 'f0 9f 98', 'e2 82 ac ff 61', 'c0 af']) {
    const b = lengthDelimited(1, bytes(raw));
    assert.deepEqual(mine(b), reference(b), raw);
  }
  const r: RlsResponse = {
    overallCode: 'OK',
    statuses: [],
    headers: [['k', 'a\ud800b\udc00\ud83d\ude00']],
    retryAfterMs: 0,
  };
  const got = encodeRateLimitResponse(r);
  assert.ok(got.includes(bytes('61 ef bf bd 62 ef bf bd f0 9f 98 80')));
  assert.equal(
    (readAnswer(got) as { response_headers_to_add: { value: string }[] }).response_headers_to_add[0]!.value,
    'a\ufffdb\ufffd😀',
  );
});
