// The demo login end to end in headless Chromium: a normal login passes; repeated failures bring a
// proof-of-work challenge that the page solves in its Web Workers; further failures ask for TOTP, which
// passes with a code this test computes (RFC 6238, test/integration/totp-reference.ts); an attack is
// blocked. Whichever guard the demo loads (the stand-in, or @sluice/guard with DEMO_GUARD_OPTIONS) climbs
// the ladder; only the real guard keeps alice's familiar address open after an attack from it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startDemo, type Demo } from '../../../../demo/login/app.js';
import { launchChromium, type Browser } from '../../../testing/src/chromium.js';
import { ROOT } from '../../../testing/src/pow-site.js';
import { base32Decode, totp } from '../support/totp-reference.js';

// Code inside page.evaluate() runs in the page; these stand in for the DOM types Node's lib lacks.
declare const document: {
  getElementById(id: string): {
    textContent: string | null;
    addEventListener(t: string, f: (e: { detail: { workers: number } }) => void): void;
  };
};
declare const window: { solved: number[] };

let browser: Browser;
let demo: Demo;
let page: Page;

before(async () => {
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-browser.mjs')], { stdio: 'ignore' });
  demo = await startDemo();
  browser = await launchChromium();
  page = await browser.context.newPage();
  await page.goto(demo.url);
  await page.evaluate(() => {
    window.solved = [];
    document.getElementById('pow').addEventListener('sluice-pow-solved', (e) => window.solved.push(e.detail.workers));
  });
});

after(async () => {
  await browser?.close();
  await demo?.close();
});

const FINAL = /^(Signed in as|Wrong username|Enter the code|That code|Too many|Error|Unexpected)/;

/** Submits the form with these fields and resolves to the page's final message. */
async function submit(password: string, code = ''): Promise<string> {
  await page.fill('input[name=password]', password);
  if (code) await page.fill('input[name=totp]', code);
  await page.evaluate(() => {
    document.getElementById('message').textContent = '';
  });
  await page.click('#submit');
  const handle = await page.waitForFunction(
    (re) => {
      const text = document.getElementById('message').textContent ?? '';
      return new RegExp(re).test(text) ? text : false;
    },
    FINAL.source,
    { timeout: 60_000 },
  );
  return (await handle.jsonValue()) as string;
}

test('a normal login passes', async () => {
  assert.equal(await submit('correct horse battery staple'), 'Signed in as alice.');
});

test('repeated failures bring a proof-of-work challenge that the page solves in Web Workers', async () => {
  const messages: string[] = [];
  // Each try is a different wrong password: the guard does not count a retyped one (the last three).
  for (let i = 0; i < 12 && (await page.evaluate(() => window.solved.length)) === 0; i++)
    messages.push(await submit(`wrong password ${i}`));
  const solved = await page.evaluate(() => window.solved);
  assert.ok(solved.length > 0, `no challenge solved after: ${messages.join(' | ')}`);
  assert.ok(solved[0]! >= 1, 'solved by at least one worker');
  assert.equal(messages.at(-1), 'Wrong username or password.', 'the solved attempt reached the password check');
  assert.match((await page.textContent('#log')) ?? '', /challenge/);
});

test('further failures ask for MFA, and a TOTP code computed here passes the step-up', async () => {
  let message = '';
  for (let i = 0; i < 12 && !message.startsWith('Enter the code'); i++)
    message = await submit(`another wrong password ${i}`);
  assert.equal(message, 'Enter the code from your authenticator app.');
  const secret = await page.textContent('#totp-secret');
  const code = totp(base32Decode(secret!), Date.now() / 1000);
  assert.equal(await submit('correct horse battery staple', code), 'Signed in as alice.');
  assert.match((await page.textContent('#log')) ?? '', /mfa/);
});

test('an attack is blocked', async () => {
  await page.click('#attack');
  const result = await page.waitForFunction(
    () => {
      const text = document.getElementById('attack-result').textContent ?? '';
      return /\d/.test(text) ? text : false;
    },
    undefined,
    { timeout: 60_000 },
  );
  assert.match((await result.jsonValue()) as string, /^from 203\.0\.113\.\d+: .*\d+ blocked/);
  // The attack came from a simulated address, so the visitor's own login is untouched, whichever guard.
  assert.equal(await submit('correct horse battery staple'), 'Signed in as alice.');
});

test('Run attack sends from simulated addresses: a new visitor who runs it first can still sign in (no 900 s lock-out)', async () => {
  const fresh = await startDemo();
  try {
    const attack = (await (await fetch(`${fresh.url}/api/attack`, { method: 'POST' })).json()) as {
      from: string;
      answers: { status: string }[];
    };
    assert.match(attack.from, /^203\.0\.113\.\d+$/);
    assert.equal(attack.answers.length, 30);
    assert.ok(
      attack.answers.some((a) => a.status === 'blocked'),
      JSON.stringify(attack.answers.map((a) => a.status)),
    );
    const again = (await (await fetch(`${fresh.url}/api/attack`, { method: 'POST' })).json()) as { from: string };
    assert.notEqual(again.from, attack.from);
    const login = await fetch(`${fresh.url}/api/login`, {
      method: 'POST',
      body: JSON.stringify({ username: 'alice', password: 'correct horse battery staple' }),
    });
    assert.deepEqual([login.status, ((await login.json()) as { status: string }).status], [200, 'ok']);
  } finally {
    await fresh.close();
  }
});

test('the reference TOTP matches RFC 6238 test vectors (SHA-1)', () => {
  const key = Buffer.from('12345678901234567890');
  assert.equal(totp(key, 59, 8), '94287082');
  assert.equal(totp(key, 1111111109, 8), '07081804');
  assert.equal(totp(key, 20000000000, 8), '65353130');
  assert.equal(totp(key, 59), '287082');
});
