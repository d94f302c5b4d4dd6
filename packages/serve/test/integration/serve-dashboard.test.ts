/// <reference lib="dom" />
// The dashboard in headless Chromium (Debian's package, driven by playwright-core): the chart gains points
// as traffic flows, shows allowed and limited hits, and the loaded config is on the page. Saves the
// screenshot the README shows (docs/dashboard.png).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import type { BrowserContext } from 'playwright-core';
import { ensureBinary } from '../../../testing/src/debian.js';
import { post, start } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/policies.yaml', import.meta.url));
// The README's picture is refreshed on request (UPDATE_SCREENSHOT=1 npm test -- serve-dashboard), so that a
// plain test run leaves the work tree clean; otherwise the screenshot goes to the temp profile folder.
const README_SCREENSHOT = fileURLToPath(new URL('../../../../docs/dashboard.png', import.meta.url));

ensureBinary('/usr/bin/chromium', 'chromium');

describe('dashboard', () => {
  let svc: RunningService;
  let browser: BrowserContext;
  const profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
  let traffic: ReturnType<typeof setInterval> | undefined;

  before(async () => {
    svc = (await start(EXAMPLE, { name: 'memory store', settings: {} }, { grpcPort: -1 }, 250)).svc;
    // A fresh profile per run (playwright passes it to Chromium as --user-data-dir).
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      viewport: { width: 1280, height: 800 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  after(async () => {
    clearInterval(traffic);
    await browser?.close();
    await svc.close();
    rmSync(profile, { recursive: true, force: true });
  });

  test('the chart updates as traffic flows, with allowed and limited hits, beside the loaded config', async () => {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${svc.adminPort}/`);
    await page.waitForFunction(() => document.getElementById('status')!.textContent!.startsWith('live'));
    assert.match((await page.textContent('#config'))!, /domain: api/);
    assert.match((await page.textContent('#rules'))!, /api\.key: 10 per second \(token-bucket, burst 20\)/);

    // Steady traffic on two keys: one within its limit, one hammered past it.
    // Fired without waiting: a request still in flight when the service closes after the test rejects, and
    // that is no failure of the dashboard (it was one of this test's, as an unhandled rejection, on a busy host).
    const fire = (path: string, body: object) => void post(svc.httpPort, path, body).catch(() => {});
    let n = 0;
    traffic = setInterval(() => {
      n++;
      fire('/v1/check', { key: 'calm' });
      for (let i = 0; i < 8; i++) fire('/v1/check', { key: 'busy' });
      fire('/json', {
        domain: 'api',
        descriptors: [{ entries: [{ key: 'remote_address', value: `198.51.100.${n % 3}` }] }],
      });
    }, 50);

    const read = () => page.evaluate(() => ({ ...document.getElementById('charts')!.dataset }));
    const first = await read();
    await page.waitForFunction(
      (s) => Number(document.getElementById('charts')!.dataset.samples) >= Number(s) + 4,
      first.samples,
      { timeout: 10_000 },
    );
    await page.waitForFunction(() => Number(document.getElementById('charts')!.dataset.limited) > 0, undefined, {
      timeout: 10_000,
    });
    const later = await read();
    assert.ok(Number(later.samples) > Number(first.samples), 'new samples arrived over SSE');
    assert.ok(Number(later.allowed) > Number(first.allowed), 'allowed hits were charted');
    assert.ok(Number(later.limited) > 0, 'limited hits were charted');
    const canvases = await page.$$eval('canvas', (cs) => cs.map((c) => (c as HTMLCanvasElement).dataset.rule));
    assert.ok(
      canvases.includes('api.key') && canvases.includes('api.remote_address'),
      `charts for ${canvases.join(', ')}`,
    );
    // The api.key chart has drawn both lines: some pixels are the allowed green and some the limited red.
    const colours = await page.$eval('canvas[data-rule="api.key"]', (c) => {
      const g = (c as HTMLCanvasElement).getContext('2d')!;
      const d = g.getImageData(0, 0, (c as HTMLCanvasElement).width, (c as HTMLCanvasElement).height).data;
      let green = 0,
        red = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i] === 0x2e && d[i + 1] === 0x9d && d[i + 2] === 0x5b) green++;
        if (d[i] === 0xd9 && d[i + 1] === 0x43 && d[i + 2] === 0x3a) red++;
      }
      return { green, red };
    });
    assert.ok(colours.green > 0 && colours.red > 0, `line pixels: ${JSON.stringify(colours)}`);
    await page.waitForTimeout(3000); // a few more seconds of history for the screenshot
    const shot = await page.screenshot({
      path: process.env.UPDATE_SCREENSHOT ? README_SCREENSHOT : join(profile, 'dashboard.png'),
    });
    assert.ok(shot.length > 10_000, 'a screenshot with content');
  });
});
