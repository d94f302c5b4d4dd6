// Descriptor matching as envoyproxy/ratelimit's README states it, and state keys that no value can forge.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from './config.js';
import { match, stateKey } from './rules.js';

const root = parseConfig([
  {
    file: 'm.yaml',
    text: `domain: m
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 10 }
  - key: remote_address
    value: 50.0.0.5
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: path
    value: /api/*
    rate_limit: { unit: second, requests_per_unit: 3 }
  - key: path
    value: /api/admin*
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit: { unit: second, requests_per_unit: 300 }
  - key: placeholder
`,
  },
]).domains.get('m')!.root;

const id = (...kv: string[]) => {
  const entries = [];
  for (let i = 0; i < kv.length; i += 2) entries.push({ key: kv[i]!, value: kv[i + 1]! });
  return match(root, entries)?.rule?.id;
};

test('key+value is tried before key alone', () => {
  assert.equal(id('remote_address', '50.0.0.5'), 'm.remote_address_50.0.0.5');
  assert.equal(id('remote_address', '50.0.0.6'), 'm.remote_address');
});

test('wildcard values match by prefix, the first listed wins', () => {
  assert.equal(id('path', '/api/users'), 'm.path_/api/*');
  assert.equal(id('path', '/api/admin/x'), 'm.path_/api/*', 'file order, as Envoy: /api/* is listed first');
  assert.equal(id('path', '/other'), undefined);
});

test('a rule applies only at the descriptor depth where it sits (README example 4)', () => {
  assert.equal(id('key', 'value', 'subkey', 'x'), 'm.key_value.subkey');
  assert.equal(id('key', 'value'), undefined, 'no rule at depth 1');
  assert.equal(id('remote_address', '1.2.3.4', 'extra', 'x'), undefined, 'deeper than the config');
  assert.equal(id('placeholder', 'x'), undefined, 'a descriptor with no rate_limit limits nothing');
});

test('state keys: one value as it is; several length-prefixed, so values with separators cannot collide', () => {
  assert.equal(stateKey([{ key: 'a', value: 'x' }]), 'x');
  const ab = stateKey([
    { key: 'a', value: '1:x' },
    { key: 'b', value: 'y' },
  ]);
  const ba = stateKey([
    { key: 'a', value: '1' },
    { key: 'b', value: 'x1:y' },
  ]);
  assert.notEqual(ab, ba);
});
