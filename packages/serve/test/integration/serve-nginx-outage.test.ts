// Issue #45 finding 6 with a real nginx (Debian's) running examples/nginx/*.conf in front of a backend, and
// `sluice serve` as a process of its own: with the recipe as it was, sluice killed made every request a
// 500 and sluice frozen (SIGSTOP) held a request 19.9 s (nginx's read timeout is 60 s). Now the auth
// subrequest has timeouts in tens of milliseconds, and each recipe says what an outage of sluice does:
// sluice.conf fails open (the app answers, `X-Sluice: unavailable`, `sluice=unavailable` in the access
// log), sluice-fail-closed.conf fails closed (503, Retry-After: 1, the app never asked).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBinary } from '../../../testing/src/debian.js';
import { startNginx } from '../support/nginx.js';
import type { RunningNginx } from '../support/nginx.js';
import { TempConfig } from './serve-helpers.js';

const CONFIG = `domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 1000 }
http_descriptors:
  - [{ key: remote_address, header: X-Real-IP }]
`;
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

ensureBinary('/usr/sbin/nginx', 'nginx-light');

/** `sluice serve` as its own process (so it can be stopped and killed); resolves with its HTTP port. */
async function sluiceProcess(config: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MAIN,
      'serve',
      '--config',
      config,
      '--port',
      '0',
      '--grpc-port',
      '-1',
      '--admin-port',
      '-1',
      '--watch',
      'false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`sluice did not start: ${out}`)), 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"http":(\d+).*"msg":"sluice serve listening"/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`sluice exited ${code}: ${out}`)));
  });
  return { child, port };
}

async function get(port: number, path: string) {
  const t0 = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return {
    status: r.status,
    ms: performance.now() - t0,
    sluice: r.headers.get('x-sluice'),
    retryAfter: r.headers.get('retry-after'),
    body: await r.text(),
  };
}

for (const [example, failure] of [
  ['sluice.conf', 'open'],
  ['sluice-fail-closed.conf', 'closed'],
] as const) {
  describe(`nginx recipe survives sluice going away: ${example} fails ${failure} (#45 finding 6)`, () => {
    const cfg = new TempConfig(CONFIG);
    let sluice: { child: ChildProcess; port: number };
    let nginx: RunningNginx;
    const backendHits: string[] = [];
    const backend = createServer((req, res) => {
      backendHits.push(req.url!);
      res.end(`backend saw ${req.url}\n`);
    });

    before(async () => {
      sluice = await sluiceProcess(cfg.path);
      await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
      nginx = await startNginx(example, join(cfg.dir, 'nginx'), sluice.port, (backend.address() as AddressInfo).port);
    });

    after(async () => {
      sluice.child.kill('SIGCONT');
      sluice.child.kill('SIGKILL');
      await nginx?.stop();
      backend.close();
      cfg.remove();
    });

    /** What an outage gives: the app's answer marked (open), or 503 without asking the app (closed); never a wait past a second. */
    const assertOutageAnswer = async (r: Awaited<ReturnType<typeof get>>, path: string) => {
      assert.ok(r.ms < 1000, `answered in ${r.ms.toFixed(0)} ms`);
      assert.equal(r.sluice, 'unavailable');
      if (failure === 'open') {
        assert.equal(r.status, 200);
        assert.equal(r.body, `backend saw ${path}\n`);
      } else {
        assert.equal(r.status, 503);
        assert.equal(r.retryAfter, '1');
        assert.equal(r.body, 'rate limiter unavailable\n');
        assert.ok(!backendHits.includes(path), 'the app was not asked');
      }
      // nginx writes the access line in its log phase, after the client has the answer: wait for it.
      const line = `"GET ${path} HTTP/1.1" ${r.status} sluice=unavailable`;
      for (let i = 0; i < 100 && !nginx.accessLog().some((l) => l.includes(line)); i++)
        await new Promise((done) => setTimeout(done, 20));
      assert.ok(
        nginx.accessLog().some((l) => l.includes(line)),
        `the access log says so: ${nginx.accessLog().slice(-3).join(' | ')}`,
      );
    };

    test(`nginx recipe with sluice SIGSTOPped: every request answered within a second, failing ${failure}, and marked`, async () => {
      const ok = await get(nginx.port, '/before-stop');
      assert.deepEqual([ok.status, ok.sluice, ok.body], [200, null, 'backend saw /before-stop\n']);
      sluice.child.kill('SIGSTOP');
      try {
        for (let i = 0; i < 3; i++) await assertOutageAnswer(await get(nginx.port, `/frozen/${i}`), `/frozen/${i}`);
      } finally {
        sluice.child.kill('SIGCONT');
      }
      let back = await get(nginx.port, '/thawed');
      for (let i = 0; i < 20 && back.sluice !== null; i++) back = await get(nginx.port, '/thawed');
      assert.deepEqual([back.status, back.sluice], [200, null], 'sluice decides again once thawed');
    });

    test(`nginx recipe with sluice killed: every request answered at once, failing ${failure}, and marked`, async () => {
      sluice.child.kill('SIGKILL');
      await new Promise((r) =>
        sluice.child.exitCode !== null || sluice.child.signalCode !== null ? r(null) : sluice.child.once('exit', r),
      );
      for (let i = 0; i < 3; i++) await assertOutageAnswer(await get(nginx.port, `/killed/${i}`), `/killed/${i}`);
    });
  });
}
