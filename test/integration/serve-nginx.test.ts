// End to end with a real nginx (Debian's package): nginx runs examples/nginx/sluice.conf on a spare loopback
// port in front of a small backend and asks `sluice serve` through auth_request. Requests within the limit
// reach the backend; the rest get 429 with Retry-After and never reach it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ensureBinary } from './debian.js';
import { start, TempConfig, variants } from './serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';

const CONFIG = `domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: hour, requests_per_unit: 3, algorithm: token-bucket }
  - key: api_key
    descriptors:
      - key: route
        value: /search*
        rate_limit: { unit: hour, requests_per_unit: 2 }
http_descriptors:
  - [{ key: remote_address, header: X-Real-IP }]
  - [{ key: api_key, header: X-Api-Key }, { key: route, header: X-Original-URI }]
`;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

ensureBinary('/usr/sbin/nginx', 'nginx-light');
const { run, skipped } = await variants();
if (skipped) test(skipped, { skip: skipped }, () => {});

for (const variant of run) {
  describe(`nginx auth_request (${variant.name})`, () => {
    const cfg = new TempConfig(CONFIG);
    let svc: RunningService;
    let nginx: ChildProcess;
    let port: number;
    const backendHits: string[] = [];
    const backend = createServer((req, res) => {
      backendHits.push(req.url!);
      res.end(`backend saw ${req.url}\n`);
    });

    before(async () => {
      svc = (await start(cfg.path, variant, { grpcPort: -1 })).svc;
      await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
      port = await freePort();
      const dir = join(cfg.dir, 'nginx');
      mkdirSync(dir);
      const site = readFileSync(new URL('../../examples/nginx/sluice.conf', import.meta.url), 'utf8')
        .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${svc.httpPort};`)
        .replace('listen 127.0.0.1:8000;', `listen 127.0.0.1:${port};`)
        .replace('proxy_pass http://127.0.0.1:3000;', `proxy_pass http://127.0.0.1:${(backend.address() as AddressInfo).port};`);
      writeFileSync(join(dir, 'sluice.conf'), site);
      const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ');
      writeFileSync(
        join(dir, 'nginx.conf'),
        `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\nevents { worker_connections 128; }\nhttp { access_log off; ${temp} include ${dir}/sluice.conf; }\n`,
      );
      nginx = spawn('/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
      for (let i = 0; i < 100; i++) {
        try {
          await fetch(`http://127.0.0.1:${port}/health-probe`, { headers: { 'x-api-key': 'probe' } });
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      backendHits.length = 0;
    });

    after(async () => {
      nginx?.kill('SIGQUIT');
      await new Promise((r) => (nginx.exitCode !== null ? r(null) : nginx.once('exit', r)));
      backend.close();
      await svc.close();
      cfg.remove();
    });

    test('within the limit requests reach the backend; beyond it nginx answers 429 with Retry-After', async () => {
      // Every request comes from 127.0.0.1: the per-IP rule allows 3 per hour (the probe spent 1).
      const results = [];
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`http://127.0.0.1:${port}/page/${i}`);
        results.push({ status: r.status, retryAfter: r.headers.get('retry-after'), remaining: r.headers.get('ratelimit-remaining'), body: await r.text() });
      }
      assert.deepEqual(results.map((r) => r.status), [200, 200, 429, 429]);
      assert.deepEqual(results.slice(0, 2).map((r) => [r.body, r.remaining]), [['backend saw /page/0\n', '1'], ['backend saw /page/1\n', '0']]);
      const wait = Number(results[2]!.retryAfter);
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 1200, `Retry-After ${results[2]!.retryAfter}`);
      assert.equal(results[2]!.body, 'rate limited\n');
      assert.deepEqual(backendHits, ['/page/0', '/page/1'], 'denied requests never reached the backend');
    });
  });
}
