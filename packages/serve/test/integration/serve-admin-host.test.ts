// Issue #45 finding 8 on the real service over loopback: the admin port answered any Host, so
// `curl -H 'Host: evil.example' 127.0.0.1:6070/config` was 200 with no token (the loopback default) and a
// page in the operator's browser could read /config and /metrics by DNS rebinding. Now only IP addresses,
// localhost and the names of --admin-hosts are answered; any other Host is 421, token or not.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { start, TempConfig } from './serve-helpers.js';

/** GET on the admin port with a Host header of our choosing (fetch() will not send one). */
function get(
  port: number,
  path: string,
  host: string | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'GET',
        setHost: host === undefined,
        headers: { ...(host === undefined ? {} : { host }), ...headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const TOKEN = 'a-token-of-twenty-chars';

describe('admin port checks Host (#45 finding 8)', () => {
  const cfg = new TempConfig(
    'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n',
  );
  after(() => cfg.remove());

  test('admin port answers any Host: evil.example is 421 on /config, /metrics and the dashboard, with the token or without', async () => {
    const { svc } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      { grpcPort: -1, watch: false, adminPort: 0 },
    );
    try {
      const port = svc.adminPort!;
      for (const path of ['/config', '/metrics', '/', '/events']) {
        const r = await get(port, path, 'evil.example');
        assert.equal(r.status, 421, `${path} with Host evil.example`);
        assert.match(r.body, /--admin-hosts/);
      }
      assert.equal((await get(port, '/config', 'evil.example:6070')).status, 421);
      assert.equal((await get(port, '/config', '127.0.0.1.evil.example')).status, 421);
      for (const host of [
        `127.0.0.1:${port}`,
        '127.0.0.1',
        `[::1]:${port}`,
        'localhost',
        `LOCALHOST:${port}`,
        'admin.localhost',
        '10.1.2.3:6070',
      ]) {
        assert.equal((await get(port, '/config', host)).status, 200, `Host ${host}`);
      }
      // Health answers whatever the Host: a balancer's probe names the service as it likes.
      assert.equal((await get(port, '/healthz', 'evil.example')).status, 200);
    } finally {
      await svc.close();
    }
  });

  test('with --admin-token a foreign Host is 421 even with the token; a listed name with it is 200', async () => {
    const { svc } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      { grpcPort: -1, watch: false, adminPort: 0, adminToken: TOKEN, adminHosts: ['sluice.internal'] },
    );
    try {
      const port = svc.adminPort!;
      const auth = { authorization: `Bearer ${TOKEN}` };
      assert.equal((await get(port, '/metrics', 'evil.example', auth)).status, 421);
      assert.equal((await get(port, '/metrics', `sluice.internal:${port}`, auth)).status, 200);
      assert.equal((await get(port, '/metrics', 'SLUICE.internal.', auth)).status, 200);
      assert.equal((await get(port, '/metrics', 'sluice.internal')).status, 401, 'a listed name still needs the token');
    } finally {
      await svc.close();
    }
  });
});
