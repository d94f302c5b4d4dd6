// The privacy check shared by every guard backend: one trace of logins with plain values, and a search of
// whatever the backend holds for every spelling of every one of them.
import assert from 'node:assert/strict';
import type { Guard } from '../../src/guard.js';

const accounts = ['alice@example.com', 'Bob.Builder', 'carol'];
const ips = ['203.0.113.77', '2001:db8:abcd:12::7', '::ffff:198.51.100.23'];
const passwords = ['hunter2-secret', 'correct horse battery', 'P@ssw0rd!'];
const fingerprint = 'device-fingerprint-xyz';

/** Every spelling of a value that would give it away: as is, lowercased, hex and base64 of its text. */
function spellings(value: string): string[] {
  const out = [value, value.toLowerCase(), Buffer.from(value).toString('hex'), Buffer.from(value).toString('base64')];
  if (value.includes('.')) out.push(...value.split(':').filter((p) => p.includes('.')));
  if (value.includes(':')) out.push(value.replace(/::.*/, ''));
  return out.filter((s) => s.length >= 4);
}

/** Failures with every password from every address, checks, and one success per account. */
export async function privacyTrace(guard: Guard): Promise<void> {
  for (const account of accounts) {
    for (const ip of ips) {
      for (const password of passwords) await guard.record({ account, ip, fingerprint, success: false, password });
      await guard.check({ account, ip, fingerprint });
    }
    await guard.record({ account, ip: ips[0]!, fingerprint, success: true });
  }
}

/** Fails naming the first plain value found in `everything`. */
export function assertNoPlainValue(everything: string): void {
  assert.ok(everything.length > 1000, 'the state is not empty');
  for (const value of [...accounts, ...ips, ...passwords, fingerprint, '198.51.100', '203.0.113', '2001:db8']) {
    for (const s of spellings(value)) assert.ok(!everything.includes(s), `found ${JSON.stringify(s)} in guard state`);
  }
}
