// renderRlsJson writes its answer from literal fragments; it must stay byte for byte what JSON.stringify of
// the protojson object tree writes (lowerCamel names, enums as names, zero values left out), and the byte
// length it counts on the way is the answer's Content-Length, so it must be Buffer.byteLength exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { renderRlsJson, renderRlsJsonSized } from './json-codec.js';
import { Answer } from './rls-types.js';
import type { CurrentLimit, DescriptorStatus, RlsResponse } from './rls-types.js';

function sized(r: RlsResponse): string {
  const { text, bytes } = renderRlsJsonSized(r);
  assert.equal(bytes, Buffer.byteLength(text), text);
  return text;
}

/** The object-tree rendering renderRlsJson stands in for. */
function reference(r: RlsResponse): string {
  return JSON.stringify({
    overallCode: r.overallCode,
    statuses: r.statuses.map((s) => ({
      code: s.code,
      currentLimit:
        s.currentLimit === undefined
          ? undefined
          : {
              name: s.currentLimit.name || undefined,
              requestsPerUnit: s.currentLimit.requestsPerUnit || undefined,
              unit: s.currentLimit.unit,
            },
      limitRemaining: s.limitRemaining || undefined,
      durationUntilReset: s.durationUntilResetMs === 0 ? undefined : `${s.durationUntilResetMs / 1000}s`,
      // sluice's addition: a status no rule decided says so (issue 38)
      matched: s.rule === undefined ? false : undefined,
    })),
    responseHeadersToAdd: r.headers.length === 0 ? undefined : r.headers.map(([key, value]) => ({ key, value })),
  });
}

const code = fc.constantFrom('OK' as const, 'OVER_LIMIT' as const);
const text = fc.oneof(
  fc.constantFrom('', 'per_ip', 'é', '€', '😀', 'a"b', 'a\\b', '\n', '\u2028', '\ud800', '10, 10;w=60'),
  fc.string({ unit: 'binary', maxLength: 4 }),
  fc.string({ maxLength: 6 }),
);
// Few distinct limits, reused across statuses and answers, as a rule's limit is: its cached text must follow it.
const limits: CurrentLimit[] = ['', 'per_ip', 'ünï "quoted"', '€ 😀'].flatMap((name) =>
  [0, 10, 4_000_000_000].flatMap((requestsPerUnit) =>
    (['SECOND', 'HOUR', 'UNKNOWN'] as const).map((unit) => ({
      name,
      requestsPerUnit,
      unit,
      header: `${requestsPerUnit}`,
    })),
  ),
);
const status: fc.Arbitrary<DescriptorStatus> = fc.record({
  code,
  currentLimit: fc.option(fc.constantFrom(...limits), { nil: undefined }),
  limitRemaining: fc.oneof(fc.constantFrom(0, 3_999_999_999, 4_294_967_295), fc.nat()),
  durationUntilResetMs: fc.oneof(
    fc.constantFrom(0, 1, 1000, 2_121_991),
    fc.nat(),
    fc.double({ min: 0, max: 1e7, noNaN: true }),
  ),
  rule: fc.constantFrom(undefined, 'r'),
  shadow: fc.boolean(),
});
/** A limit made fresh for each answer, with any RateLimit-Limit header text, escaping or not. */
const anyLimit: fc.Arbitrary<CurrentLimit> = fc.record({
  name: fc.constantFrom('', 'per_ip', 'ünï "quoted"', '€ 😀'),
  requestsPerUnit: fc.constantFrom(0, 10, 4_000_000_000),
  unit: fc.constantFrom('SECOND' as const, 'HOUR' as const, 'UNKNOWN' as const),
  header: fc.oneof(fc.constantFrom('10, 10;w=60', '4000000000, 4000000000;w=3600'), text),
});
const headerName = fc.oneof(
  fc.constantFrom('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'),
  fc.stringMatching(/^[A-Za-zé€-]{1,12}$/),
);
const response: fc.Arbitrary<RlsResponse> = fc.record({
  overallCode: code,
  statuses: fc.array(status, { minLength: 1, maxLength: 3 }),
  headers: fc.array(fc.tuple(headerName, text), { maxLength: 4 }),
  retryAfterMs: fc.nat(),
});

test('renderRlsJson writes what JSON.stringify of the protojson object tree writes, and counts its UTF-8 bytes', () => {
  const limit = limits.find((l) => l.requestsPerUnit === 4_000_000_000 && l.unit === 'HOUR' && l.name === '')!;
  const answer: RlsResponse = {
    overallCode: 'OK',
    statuses: [
      {
        code: 'OK',
        currentLimit: limit,
        limitRemaining: 3_999_999_999,
        durationUntilResetMs: 2_121_991,
        rule: 'bench.remote_address',
        shadow: false,
      },
    ],
    headers: [
      ['RateLimit-Limit', '4000000000, 4000000000;w=3600'],
      ['RateLimit-Remaining', '3999999999'],
      ['RateLimit-Reset', '2122'],
    ],
    retryAfterMs: 0,
  };
  assert.equal(renderRlsJson(answer), reference(answer));
  assert.equal(sized(answer), reference(answer));
  fc.assert(
    fc.property(response, (r) => {
      assert.equal(sized(r), reference(r));
    }),
    { numRuns: 5000 },
  );
});

test('the common answer (OK on one descriptor with a limit, the three RateLimit headers) renders as the general one does', () => {
  // renderRlsJsonSized writes this shape from text cached per limit; any value that needs escaping, or a
  // RateLimit-Limit value other than the limit's own header, must still come out as JSON.stringify writes it.
  const common = fc
    .tuple(
      anyLimit,
      fc.oneof(fc.constantFrom(3_999_999_999, 4_294_967_295), fc.integer({ min: 1 })),
      fc.oneof(fc.constantFrom(1, 2_121_991), fc.integer({ min: 1 }), fc.double({ min: 0.001, max: 1e7, noNaN: true })),
      text,
      text,
      fc.boolean(),
    )
    .map(
      ([l, remaining, ms, remainingText, resetText, own]): RlsResponse => ({
        overallCode: 'OK',
        statuses: [
          {
            code: 'OK',
            currentLimit: l,
            limitRemaining: remaining,
            durationUntilResetMs: ms,
            rule: 'r',
            shadow: false,
          },
        ],
        headers: [
          ['RateLimit-Limit', own ? l.header : `${l.header}x`],
          ['RateLimit-Remaining', remainingText],
          ['RateLimit-Reset', resetText],
        ],
        retryAfterMs: 0,
      }),
    );
  fc.assert(
    fc.property(common, (r) => {
      assert.equal(sized(r), reference(r));
    }),
    { numRuns: 3000 },
  );
});

test("the service's own Answer, whose headers are built only when read, renders as the same answer with its headers built", () => {
  // /json renders an Answer's common shape from its tightest status, without its headers: the text must be
  // what the headers it would build give.
  const one = fc.record({
    code,
    currentLimit: fc.option(anyLimit, { nil: undefined }),
    limitRemaining: fc.oneof(fc.constantFrom(0, 1, 3_999_999_999, 4_294_967_295, 1e21), fc.nat()),
    durationUntilResetMs: fc.oneof(
      fc.constantFrom(0, 1, 999, 1000, 2_121_991),
      fc.nat(),
      fc.double({ min: 0, max: 1e7, noNaN: true }),
    ),
    rule: fc.constant('r'),
    shadow: fc.boolean(),
  });
  const answer = fc.tuple(fc.array(one, { minLength: 1, maxLength: 3 }), fc.boolean()).map(([statuses, shadowed]) => {
    const over = statuses.some((s) => s.code === 'OVER_LIMIT');
    let tightest: DescriptorStatus | undefined;
    for (const s of statuses)
      if (s.currentLimit !== undefined && (tightest === undefined || s.limitRemaining < tightest.limitRemaining))
        tightest = s;
    const retryAfterMs = Math.max(
      0,
      ...statuses.filter((s) => s.code === 'OVER_LIMIT').map((s) => s.durationUntilResetMs),
    );
    // Global shadow mode answers OK, with no Retry-After.
    return shadowed
      ? new Answer('OK', statuses, tightest, 0, false)
      : new Answer(over ? 'OVER_LIMIT' : 'OK', statuses, tightest, retryAfterMs, over);
  });
  fc.assert(
    fc.property(answer, (a) => {
      const rendered = sized(a); // before anything reads a.headers
      assert.equal(rendered, reference(a));
      const r = a.tightest;
      if (r?.currentLimit !== undefined) {
        assert.deepEqual(a.headers.slice(0, 3), [
          ['RateLimit-Limit', r.currentLimit.header],
          ['RateLimit-Remaining', String(r.limitRemaining)],
          ['RateLimit-Reset', String(Math.ceil(r.durationUntilResetMs / 1000))],
        ]);
      }
    }),
    { numRuns: 5000 },
  );
});
