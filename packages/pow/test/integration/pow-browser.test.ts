// The browser solver end to end in headless Chromium: the <sluice-pow> widget fetches a challenge, solves
// it in one Web Worker per core, fills the hidden field, and the server accepts the login once; progress
// is reported and a cancelled solve stops.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { launchChromium, type Browser } from '../../../testing/src/chromium.js';
import { ROOT, startSite, type Site } from '../../../testing/src/pow-site.js';

// Code inside page.evaluate() runs in the page; these stand in for the DOM types Node's lib lacks.
declare const document: {
  querySelector(selector: string): EventTarget;
  createElement(tag: string): unknown;
  body: { append(node: unknown): void };
};
declare const navigator: { hardwareConcurrency: number };
type HTMLElement = EventTarget;

let browser: Browser;
let site: Site;

before(async () => {
  execFileSync(process.execPath, [join(ROOT, 'scripts/build-browser.mjs')], { stdio: 'ignore' });
  site = await startSite();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('the widget solves a challenge in Web Workers on submit and the server accepts it', async () => {
  const page = await browser.context.newPage();
  await page.goto(site.url);
  const events = page.evaluate(
    () =>
      new Promise<{ progress: number; workers: number; cores: number }>((resolve) => {
        let progress = 0;
        const el = document.querySelector('sluice-pow')!;
        el.addEventListener('sluice-pow-progress', () => progress++);
        el.addEventListener('sluice-pow-solved', (e) =>
          resolve({
            progress,
            workers: (e as Event & { detail: { workers: number } }).detail.workers,
            cores: navigator.hardwareConcurrency,
          }),
        );
      }),
  );
  await page.click('#go');
  const seen = await events;
  await page.waitForSelector('#result');
  assert.equal(await page.textContent('#result'), 'ok');
  assert.ok(seen.progress >= 16, `progress events: ${seen.progress}`); // at least one per sub-puzzle
  assert.equal(seen.workers, Math.min(16, seen.cores));
  await page.close();
});

test('a solution posted twice is replayed; a solution for another account is wrong-scope', async () => {
  const page = await browser.context.newPage();
  await page.goto(site.url);
  const solution = await page.evaluate(async () => {
    const el = document.querySelector('sluice-pow') as HTMLElement & { solve(): Promise<{ solution: string }> };
    return (await el.solve()).solution;
  });
  const post = (username: string) =>
    page.evaluate(
      async ([pow, user]) => {
        const r = await fetch('/login', { method: 'POST', body: new URLSearchParams({ username: user!, pow: pow! }) });
        return (await r.text()).replace(/<[^>]+>/g, '');
      },
      [solution, username],
    );
  assert.equal(await post('bob'), 'wrong-scope');
  assert.equal(await post('alice'), 'ok');
  assert.equal(await post('alice'), 'replayed');
  await page.close();
});

test('cancel() stops a long solve: the promise rejects and progress stops', async () => {
  const page = await browser.context.newPage();
  await page.goto(site.url);
  site.difficulty = 2 ** 29; // minutes of work
  try {
    const outcome = await page.evaluate(async () => {
      const el = document.querySelector('sluice-pow') as HTMLElement & { solve(): Promise<unknown>; cancel(): void };
      let progress = 0;
      let first: () => void;
      const started = new Promise<void>((r) => (first = r));
      el.addEventListener('sluice-pow-progress', () => (progress++, first()));
      const solving = el.solve();
      await started;
      await new Promise((r) => setTimeout(r, 200));
      el.cancel();
      const error = await solving.then(
        () => 'solved',
        (e: Error) => e.message,
      );
      const atCancel = progress;
      await new Promise((r) => setTimeout(r, 300));
      return { error, atCancel, after: progress };
    });
    assert.equal(outcome.error, 'cancelled');
    assert.ok(outcome.atCancel > 0, 'progress was reported before the cancel');
    assert.equal(outcome.after, outcome.atCancel, 'no progress after the cancel');
  } finally {
    site.difficulty = 20_000;
    await page.close();
  }
});

test('with a challenge attribute the widget starts at once and fills the named hidden field', async () => {
  const page = await browser.context.newPage();
  await page.goto(`${site.url}/blank`);
  const { token } = (await (await fetch(`${site.url}/pow/challenge?username=carol`)).json()) as { token: string };
  await page.addScriptTag({ url: '/sluice-pow.js' });
  const value = await page.evaluate(
    (token) =>
      new Promise<string>((resolve) => {
        const form = document.createElement('form') as unknown as EventTarget & {
          innerHTML: string;
          querySelector(s: string): { value: string } & EventTarget;
        };
        form.innerHTML = `<sluice-pow name="proof" challenge="${token}"></sluice-pow>`;
        form.addEventListener('sluice-pow-solved', () => resolve(form.querySelector('input[name=proof]').value));
        document.body.append(form);
      }),
    token,
  );
  const posted = await fetch(`${site.url}/login`, {
    method: 'POST',
    body: new URLSearchParams({ username: 'carol', pow: value }),
  });
  assert.equal(posted.status, 200);
  await page.close();
});
