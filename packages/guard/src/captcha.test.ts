// The CAPTCHA adapters against a local HTTP server that speaks the siteverify protocol.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { hcaptcha, recaptcha, turnstile } from './captcha.js';

const SECRET = 'server-secret';
let server: Server;
let url = '';
const seen: URLSearchParams[] = [];

/** Tokens name the answer they get: ok, ok-host:<h>, score:<s>, bad, slow, html, 500. */
before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      seen.push(form);
      const token = form.get('response') ?? '';
      const reply = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(typeof json === 'string' ? json : JSON.stringify(json));
      };
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-www-form-urlencoded')
        return reply(400, { success: false, 'error-codes': ['bad-request'] });
      if (form.get('secret') !== SECRET) return reply(200, { success: false, 'error-codes': ['invalid-input-secret'] });
      if (token === 'slow') return void setTimeout(() => reply(200, { success: true }), 2000);
      if (token === 'html') return reply(200, '<html>oops</html>');
      if (token === '500') return reply(500, { success: true });
      if (token === 'bad') return reply(200, { success: false, 'error-codes': ['invalid-input-response'] });
      if (token.startsWith('score:'))
        return reply(200, { success: true, score: Number(token.slice(6)), action: 'login', hostname: 'example.com' });
      if (token.startsWith('ok-host:'))
        return reply(200, { success: true, hostname: token.slice(8), challenge_ts: new Date(0).toISOString() });
      return reply(200, { success: true, hostname: 'example.com', 'error-codes': [] });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/siteverify`;
});

after(() => server.close());

test('each adapter posts secret, response and remoteip as a form and accepts a success', async () => {
  for (const make of [turnstile, hcaptcha, recaptcha]) {
    const r = await make({ secret: SECRET, url }).verify('ok', '203.0.113.7');
    assert.deepEqual(r, { success: true, errorCodes: [], hostname: 'example.com', score: undefined });
    const form = seen.at(-1)!;
    assert.deepEqual([form.get('secret'), form.get('response'), form.get('remoteip')], [SECRET, 'ok', '203.0.113.7']);
  }
});

test('the provider default endpoints are the documented siteverify URLs', () => {
  assert.equal(turnstile({ secret: 's' }).name, 'turnstile');
  assert.match(
    (turnstile({ secret: 's' }) as unknown as { url: string }).url,
    /challenges\.cloudflare\.com\/turnstile\/v0\/siteverify$/,
  );
  assert.match((hcaptcha({ secret: 's' }) as unknown as { url: string }).url, /hcaptcha\.com\/siteverify$/);
  assert.match(
    (recaptcha({ secret: 's' }) as unknown as { url: string }).url,
    /google\.com\/recaptcha\/api\/siteverify$/,
  );
});

test('a refusal carries the provider error codes; a wrong secret is a refusal', async () => {
  assert.deepEqual((await turnstile({ secret: SECRET, url }).verify('bad')).errorCodes, ['invalid-input-response']);
  assert.deepEqual((await turnstile({ secret: 'wrong', url }).verify('ok')).errorCodes, ['invalid-input-secret']);
});

test('hostname, action and score checks', async () => {
  const p = turnstile({ secret: SECRET, url, expectedHostname: 'example.com' });
  assert.equal((await p.verify('ok-host:example.com')).success, true);
  assert.deepEqual((await p.verify('ok-host:evil.test')).errorCodes, ['hostname-mismatch']);
  const v3 = recaptcha({ secret: SECRET, url, minScore: 0.5, expectedAction: 'login' });
  assert.deepEqual(await v3.verify('score:0.9'), {
    success: true,
    errorCodes: [],
    hostname: 'example.com',
    score: 0.9,
  });
  assert.deepEqual((await v3.verify('score:0.3')).errorCodes, ['score-too-low']);
  assert.deepEqual(
    (await recaptcha({ secret: SECRET, url, expectedAction: 'signup' }).verify('score:0.9')).errorCodes,
    ['action-mismatch'],
  );
});

test('anything but a clear yes is a no: empty token, timeout, HTTP error, bad JSON, no server', async () => {
  const p = hcaptcha({ secret: SECRET, url, timeoutMs: 200 });
  const before = seen.length;
  assert.deepEqual((await p.verify('')).errorCodes, ['missing-input-response']);
  assert.equal(seen.length, before, 'an empty token is not sent');
  assert.deepEqual((await p.verify('slow')).errorCodes, ['timeout']);
  assert.deepEqual((await p.verify('500')).errorCodes, ['bad-response']);
  assert.deepEqual((await p.verify('html')).errorCodes, ['bad-response']);
  const closed = hcaptcha({ secret: SECRET, url: 'http://127.0.0.1:9/siteverify', timeoutMs: 1000 });
  assert.deepEqual((await closed.verify('ok')).errorCodes, ['network-error']);
});

test('a missing secret is a SluiceError naming it', () => {
  assert.throws(() => turnstile({ secret: '' }), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: `[sluice] turnstile 'secret' must be the provider's non-empty secret key, got ""`,
  });
});
