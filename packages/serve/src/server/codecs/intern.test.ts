import assert from 'node:assert/strict';
import { test } from 'node:test';
import { internalized } from './intern.js';

test("internalized('__proto__') is '__proto__': as a plain object's key it set the prototype, and gave undefined", () => {
  assert.equal(internalized('__proto__'), '__proto__');
  for (const s of ['', 'bench', 'remote_address', 'constructor', 'toString', '42', 'ünïcødé'])
    assert.equal(internalized(s), s);
});
