// POST /json's answer on the wire: its Content-Length is its UTF-8 byte length and its bytes are the UTF-8
// of the rendered text, whether the answer is ASCII (written as latin1, the same bytes by a plain copy) or
// not (a limit named in any script, written as UTF-8).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startService } from './serve.js';
import { DEFAULTS } from './settings.js';

const CONFIG = `domain: web
descriptors:
  - key: user
    rate_limit: { name: "café ≤ 😀", unit: hour, requests_per_unit: 5 }
  - key: ip
    rate_limit: { unit: hour, requests_per_unit: 5 }
`;

test('POST /json answers ASCII and non-ASCII bodies with their exact UTF-8 bytes and byte length', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-http-'));
  const config = join(dir, 'policies.yaml');
  writeFileSync(config, CONFIG);
  const quiet = new Writable({ write: (_c, _e, done) => done() });
  const svc = await startService({ ...DEFAULTS, config, port: 0, grpcPort: -1, watch: false, clock: 'monotonic' }, { logStream: quiet });
  try {
    for (const [key, name] of [
      ['ip', undefined],
      ['user', 'café ≤ 😀'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${svc.httpPort}/json`, {
        method: 'POST',
        body: JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key, value: '1.2.3.4' }] }] }),
      });
      assert.equal(res.status, 200);
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(Number(res.headers.get('content-length')), bytes.length);
      const text = bytes.toString('utf8');
      assert.deepEqual(Buffer.from(text, 'utf8'), bytes, 'valid UTF-8');
      const answer = JSON.parse(text);
      assert.equal(answer.overallCode, 'OK');
      assert.equal(answer.statuses[0].currentLimit.name, name);
      assert.equal(answer.statuses[0].limitRemaining, 4);
      assert.equal(text, JSON.stringify(answer), 'compact protojson');
    }
  } finally {
    await svc.close(0);
    rmSync(dir, { recursive: true, force: true });
  }
});
