// decodeRlsJsonFast is only a shortcut: whatever body it accepts, it must decode to exactly what
// JSON.parse + decodeRlsJson give, and it must give up on every body the general path rejects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeRlsJson, decodeRlsJsonFast } from './json-codec.js';

function general(text: string): unknown {
  try {
    return decodeRlsJson(JSON.parse(text));
  } catch {
    return 'rejected';
  }
}

function agrees(text: string): void {
  const fast = decodeRlsJsonFast(text);
  if (fast === undefined) return; // the general path decides, as before
  assert.deepEqual(fast, general(text), text);
}

test('the canonical Envoy body takes the fast path and decodes as the general path does', () => {
  const texts = [
    '{"domain":"bench","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.1.1"}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"a","value":"1"},{"key":"b","value":"2"}]},{"entries":[{"key":"c","value":"3"}],"hits_addend":7}],"hitsAddend":3}',
    ' {\n "descriptors" : [ { "hitsAddend" : 0 , "entries" : [ { "value" : "v" , "key" : "k" } ] } ] ,\t"domain":"d" }\r\n',
    '{"domain":"ünï","descriptors":[{"entries":[{"key":"k","value":"\u2028 x"}]}],"hits_addend":4294967295}',
    // the compact form, one and several entries and descriptors
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"a","value":"1"},{"key":"b","value":"2"}]},{"entries":[{"key":"c","value":"3"}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]} ',
  ];
  for (const t of texts) {
    assert.notEqual(decodeRlsJsonFast(t), undefined, t);
    assert.deepEqual(decodeRlsJsonFast(t), general(t), t);
  }
});

test('bodies the fast path leaves to the general path', () => {
  for (const t of [
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"a\\"b"}]}]}', // escape
    '{"domain":"","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}', // empty string: an error to name
    '{"domain":"d","descriptors":[]}',
    '{"domain":"d","descriptors":[{"entries":[]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requests_per_unit":1,"unit":"SECOND"}}]}',
    '{"domain":"d","domain":"e","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}', // duplicate: JSON.parse keeps the last
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hits_addend":1,"hitsAddend":2}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hits_addend":"5"}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hits_addend":1.0}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hits_addend":01}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hits_addend":4294967296}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"extra":1}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}x',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]',
    '\ufeff{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
    '{"domain":"a\tb","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]},]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"},]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"","value":"v"}]}]}',
    '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"a\\"}]}]}',
    '',
  ]) {
    assert.equal(decodeRlsJsonFast(t), undefined, t);
  }
});

test('property: on any body, the fast path either gives up or agrees with JSON.parse + decodeRlsJson', () => {
  const str = fc.oneof(fc.constantFrom('', 'k', 'v', 'a"b', 'a\\b', 'é', '\n'), fc.string({ maxLength: 4 }));
  const num = fc.oneof(fc.integer({ min: -2, max: 2 ** 33 }), fc.double(), fc.constantFrom('5', null));
  const entry = fc.dictionary(fc.constantFrom('key', 'value', 'x'), fc.oneof(str, num), { maxKeys: 3 });
  const descriptor = fc.dictionary(
    fc.constantFrom('entries', 'hits_addend', 'hitsAddend', 'limit'),
    fc.oneof(fc.array(entry, { maxLength: 3 }), num, str),
    { maxKeys: 4 },
  );
  const body = fc.dictionary(
    fc.constantFrom('domain', 'descriptors', 'hits_addend', 'hitsAddend', 'y'),
    fc.oneof(str, num, fc.array(descriptor, { maxLength: 3 })),
    { maxKeys: 5 },
  );
  // Mostly well-formed requests, so that the fast path is taken often, with the odd field out of line.
  const ne = fc.oneof(
    { arbitrary: fc.stringMatching(/^[a-z0-9._é]{1,8}$/), weight: 40 },
    { arbitrary: fc.constantFrom('a"b', 'a\\b', '', '\t'), weight: 1 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 6 }), weight: 1 },
  );
  const hits = fc.oneof(
    { arbitrary: fc.nat({ max: 2 ** 32 + 1000 }), weight: 15 },
    { arbitrary: fc.constantFrom(0, 1, -1, 1.5, '2', null), weight: 1 },
  );
  const wellFormed = fc.record(
    {
      domain: ne,
      descriptors: fc.array(
        fc.record(
          { entries: fc.array(fc.record({ key: ne, value: ne }), { minLength: 1, maxLength: 3 }), hits_addend: hits },
          { requiredKeys: ['entries'] },
        ),
        { minLength: 1, maxLength: 3 },
      ),
      hitsAddend: hits,
    },
    { requiredKeys: ['domain', 'descriptors'] },
  );
  const any = fc.oneof(wellFormed, wellFormed, body);
  // Raw text too, so that whitespace, duplicates and truncation are covered, not only what JSON.stringify writes.
  const ws = fc.constantFrom('', ' ', '\n', '\t', ' \r\n');
  const text = fc.oneof(
    any.map((b) => JSON.stringify(b)),
    fc.tuple(any, ws).map(([b, w]) => JSON.stringify(b, null, w === '' ? undefined : w)),
    fc.tuple(any, fc.nat()).map(([b, n]) => {
      const t = JSON.stringify(b);
      return t.slice(0, n % (t.length + 1));
    }),
    fc
      .tuple(any, any)
      .map(([a, b]) => `${JSON.stringify(a).slice(0, -1)},${JSON.stringify(b).slice(1)}`.replace('{,', '{')),
  );
  let fast = 0;
  fc.assert(
    fc.property(text, (t) => {
      if (decodeRlsJsonFast(t) !== undefined) fast++;
      agrees(t);
    }),
    { numRuns: 3000 },
  );
  assert.ok(fast > 300, `only ${fast} of 3000 bodies took the fast path: the property would prove little`);
});

test('a kept head (the text up to the first value) decodes later bodies exactly as a fresh read would', () => {
  // decodeCompact keeps the last few heads with their domain and key; a body that starts with one is read
  // from its first value on. Same answers as the general path, whatever came before, and the same give-ups.
  const head = (d: string, k: string) => `{"domain":"${d}","descriptors":[{"entries":[{"key":"${k}","value":"`;
  const tails = [
    '1"}]}]}',
    '10.0.1.1"}]}]}',
    '1"},{"key":"k2","value":"2"}]}]}',
    '1"}]},{"entries":[{"key":"c","value":"3"}]}]}',
  ];
  const refused = [
    '"}]}]}',
    'a\\"b"}]}]}',
    '1"}]}]',
    '1"}]}]} ',
    '1"}]}],"hits_addend":2}',
    '1"}]}]}]}',
    '1"},]}]}',
    '1"}],"limit":{}}]}',
    '1\t"}]}]}',
    '1',
  ];
  const pairs = [
    ['bench', 'remote_address'],
    ['d', 'k'],
    ['d', 'k2'],
    ['ünï', 'path'],
    ['e', 'k'],
    ['bench', 'remote'],
    ['d', 'k'],
  ];
  for (let round = 0; round < 3; round++) {
    for (const [d, k] of pairs) {
      for (const t of tails) {
        const text = head(d!, k!) + t;
        assert.notEqual(decodeRlsJsonFast(text), undefined, text);
        assert.deepEqual(decodeRlsJsonFast(text), general(text), text);
      }
      for (const t of refused) agrees(head(d!, k!) + t); // the compact form gives up; the scan may take it
    }
  }
  // A longer head that starts with a kept one is not mistaken for it.
  decodeRlsJsonFast(`${head('d', 'k')}1"}]}]}`);
  const longer = '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"","x":1}]}]}';
  assert.equal(decodeRlsJsonFast(longer), undefined);
});
