// End to end with a real nginx (Debian's package): nginx runs examples/nginx/sluice.conf on a spare loopback
// port in front of a small backend and asks `sluice serve` through auth_request. Requests within the limit
// reach the backend; the rest get 429 with Retry-After and never reach it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ensureBinary } from '../../../testing/src/debian.js';
import { startNginx } from '../support/nginx.js';
import type { RunningNginx } from '../support/nginx.js';
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

ensureBinary('/usr/sbin/nginx', 'nginx-light');
const { run, skipped } = await variants();
if (skipped) test(skipped, { skip: skipped }, () => {});

for (const variant of run) {
  describe(`nginx auth_request (${variant.name})`, () => {
    const cfg = new TempConfig(CONFIG);
    let svc: RunningService;
    let nginx: RunningNginx;
    let port: number;
    const backendHits: string[] = [];
    const backend = createServer((req, res) => {
      backendHits.push(req.url!);
      res.end(`backend saw ${req.url}\n`);
    });

    before(async () => {
      svc = (await start(cfg.path, variant, { grpcPort: -1 })).svc;
      await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
      nginx = await startNginx(
        'sluice.conf',
        join(cfg.dir, 'nginx'),
        svc.httpPort,
        (backend.address() as AddressInfo).port,
      );
      port = nginx.port;
      backendHits.length = 0;
    });

    after(async () => {
      await nginx?.stop();
      backend.close();
      await svc.close();
      cfg.remove();
    });

    test('within the limit requests reach the backend; beyond it nginx answers 429 with Retry-After', async () => {
      // Every request comes from 127.0.0.1: the per-IP rule allows 3 per hour (the probe spent 1).
      const results = [];
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`http://127.0.0.1:${port}/page/${i}`);
        results.push({
          status: r.status,
          retryAfter: r.headers.get('retry-after'),
          remaining: r.headers.get('ratelimit-remaining'),
          body: await r.text(),
        });
      }
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 200, 429, 429],
      );
      assert.deepEqual(
        results.slice(0, 2).map((r) => [r.body, r.remaining]),
        [
          ['backend saw /page/0\n', '1'],
          ['backend saw /page/1\n', '0'],
        ],
      );
      const wait = Number(results[2]!.retryAfter);
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 1200, `Retry-After ${results[2]!.retryAfter}`);
      assert.equal(results[2]!.body, 'rate limited\n');
      assert.deepEqual(backendHits, ['/page/0', '/page/1'], 'denied requests never reached the backend');
    });
  });
}
