// The dashboard page links to the login demo only when told where it runs, and never trusts the URL as HTML.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dashboard } from './dashboard.js';
import { readSettings } from './settings.js';

const noService = () => {
  throw new Error('page() must not need the service');
};

test('the dashboard links to the login demo when --demo-url is set', () => {
  assert.doesNotMatch(new Dashboard(noService).page(), /id="demo"/);
  const page = new Dashboard(noService, 1000, 'http://127.0.0.1:3000/?a=1&b=2').page();
  assert.match(page, /<a id="demo" href="http:\/\/127\.0\.0\.1:3000\/\?a=1&#38;b=2">login demo/);
});

test('--demo-url must be an http(s) URL', () => {
  assert.equal(readSettings(['--config', 'x.yaml', '--demo-url', 'http://127.0.0.1:3000/'], {}).demoUrl, 'http://127.0.0.1:3000/');
  assert.throws(() => readSettings(['--config', 'x.yaml', '--demo-url', 'javascript:alert(1)'], {}), /--demo-url must be an http\(s\) URL, got "javascript:alert\(1\)"/);
});
