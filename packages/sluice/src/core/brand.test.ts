// core/brand.ts: an object of this release from another copy of sluice (the other module format) passes
// instanceof; one of another release does not, and foreignVersion names its release for the error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../limiter.js';
import { MemoryStore } from '../stores/memory.js';
import { brandOf, foreignVersion, SLUICE_VERSION } from './brand.js';
import { SluiceError } from './errors.js';
import { readFileSync } from 'node:fs';

test('the brand carries the release in package.json', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(SLUICE_VERSION, pkg.version);
});

test("another copy's Limiter, MemoryStore and SluiceError of this release pass instanceof; another release's do not", () => {
  const copy = (name: string, version: string) => ({ [brandOf(name)]: version });
  assert.ok(copy('Limiter', SLUICE_VERSION) instanceof Limiter);
  assert.ok(copy('MemoryStore', SLUICE_VERSION) instanceof MemoryStore);
  assert.ok(copy('SluiceError', SLUICE_VERSION) instanceof SluiceError);
  assert.ok(!(copy('Limiter', '0.0.1') instanceof Limiter));
  assert.equal(foreignVersion(copy('Limiter', '0.0.1'), brandOf('Limiter')), '0.0.1');
  assert.ok(!({} instanceof Limiter));
  assert.ok(new Limiter({ policy: { algorithm: 'gcra', limit: 1, window: '1s' } }) instanceof Limiter);
  class Mine extends Limiter {}
  assert.ok(!(copy('Limiter', SLUICE_VERSION) instanceof Mine), "a subclass's instanceof is its own");
});
