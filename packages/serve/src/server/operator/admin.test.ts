// The admin port's Host check (#45 finding 8; the service over loopback: test/integration/serve-admin-host.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminHostAllowed } from './admin.js';
import { readSettings, SettingsError } from '../config/settings.js';

test('adminHostAllowed: addresses, localhost and listed names; anything else, or a malformed Host, is refused', () => {
  for (const h of [
    undefined,
    '127.0.0.1',
    '127.0.0.1:80',
    '[::1]',
    '[::1]:6070',
    '192.168.0.9:1',
    'localhost',
    'localhost.',
    'a.localhost:9',
  ])
    assert.equal(adminHostAllowed(h), true, String(h));
  for (const h of [
    '',
    'evil.example',
    'localhost.evil.example',
    '[::1',
    '[nope]:80',
    '127.0.0.1:80x',
    '::1',
    'sluice.internal',
  ])
    assert.equal(adminHostAllowed(h), false, h);
  assert.equal(adminHostAllowed('sluice.internal:443', ['sluice.internal']), true);
});

test('--admin-hosts takes comma-separated host names and names a bad one', () => {
  assert.deepEqual(
    readSettings(['--config', 'x.yaml', '--admin-hosts', 'Sluice.Internal, metrics.example.com.'], {}).adminHosts,
    ['sluice.internal', 'metrics.example.com'],
  );
  assert.deepEqual(readSettings(['--config', 'x.yaml'], { SLUICE_ADMIN_HOSTS: 'a.b' }).adminHosts, ['a.b']);
  assert.deepEqual(readSettings(['--config', 'x.yaml'], {}).adminHosts, []);
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--admin-hosts', 'https://sluice.internal'], {}),
    (e: unknown) =>
      e instanceof SettingsError &&
      /--admin-hosts must be host names.*"https:\/\/sluice.internal" is not a host name/.test(e.message),
  );
  assert.throws(() => readSettings(['--config', 'x.yaml', '--admin-hosts', 'a.b:80'], {}), SettingsError);
});
