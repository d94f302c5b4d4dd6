// Issue #37 finding 4 on the real service over loopback: a big config reload stopped the decisions (10,000
// rules: 1.7 s; 50,000: 12.6 s) and a huge one killed the process. Now the config is bounded in bytes and in
// rules (a clear error naming the limit and the value, the previous config kept for every file), and a
// reload is built off the decision path, so decisions are answered while it is built. How long its slices
// hold the thread is measured in bench/reload.mjs, not here.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../src/server/config/config.js';
import { post, start, TempConfig, type LogSink } from './serve-helpers.js';

function rules(n: number, limit: number): string {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n';
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
  return y;
}

const check = (port: number, descriptor: Record<string, string>) =>
  post(port, '/v1/check', { domain: 'api', descriptors: [descriptor] });
const rejected = (logs: LogSink) =>
  [...logs.lines].reverse().find((l) => l.msg === 'config reload rejected; the previous config stays in force');

describe('config reload (#37 finding 4)', () => {
  const cfg = new TempConfig(rules(10, 5));
  after(() => cfg.remove());

  test('big config reload does not stop decisions: they are answered while 20,000 rules are read and built, then the new rules decide', async () => {
    const { svc } = await start(cfg.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false });
    try {
      assert.equal((await check(svc.httpPort, { tenant: 't3' })).json.statuses[0].limit, 5);
      cfg.write(rules(20_000, 7));
      let built = false;
      const reloaded = svc.reload('test').then((ok) => ((built = true), ok));
      let answeredMeanwhile = 0;
      for (let i = 0; i < 5; i++) {
        const r = await check(svc.httpPort, { user: `during-${i}` });
        assert.equal(r.status, 200);
        if (!built) answeredMeanwhile++;
      }
      assert.equal(answeredMeanwhile, 5, 'every decision was answered before the reload was swapped in');
      assert.equal(
        (await check(svc.httpPort, { tenant: 't3' })).json.statuses[0].limit,
        5,
        'the previous config decides until the swap',
      );
      assert.equal(await reloaded, true);
      assert.equal(svc.service.rules.rules.size, 20_001);
      assert.equal((await check(svc.httpPort, { tenant: 't19999' })).json.statuses[0].limit, 7);
      assert.equal((await check(svc.httpPort, { tenant: 't3' })).json.statuses[0].limit, 7);
    } finally {
      await svc.close();
    }
  });

  test('config over --max-rules: the reload is refused naming the limit and the count, and the previous config stays for every file', async () => {
    const dir = new TempConfig(rules(2, 5), 'a.yaml');
    writeFileSync(
      join(dir.dir, 'b.yaml'),
      'domain: other\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 3 }\n',
    );
    const { svc, logs } = await start(
      dir.dir,
      { name: 'memory', settings: {} },
      { grpcPort: -1, watch: false, maxRules: 10 },
    );
    try {
      // a.yaml changes within the bound; b.yaml grows past it: neither applies.
      writeFileSync(join(dir.dir, 'a.yaml'), rules(2, 9));
      let b = 'domain: other\ndescriptors:\n';
      for (let i = 0; i < 12; i++) b += `  - key: k${i}\n    rate_limit: { unit: second, requests_per_unit: 4 }\n`;
      writeFileSync(join(dir.dir, 'b.yaml'), b);
      assert.equal(await svc.reload('test'), false);
      assert.deepEqual(rejected(logs)!.problems, ['2 files: the config holds 15 rules; at most 10 (--max-rules)']);
      assert.equal(
        (await check(svc.httpPort, { tenant: 't1' })).json.statuses[0].limit,
        5,
        "a.yaml's change is not applied either",
      );
      assert.equal(svc.service.rules.rules.size, 4);
    } finally {
      await svc.close();
      dir.remove();
    }
  });

  test('config over --max-config-bytes: the reload is refused before the file is parsed, naming the limit and the size', async () => {
    const one = new TempConfig(rules(2, 5));
    const { svc, logs } = await start(
      one.path,
      { name: 'memory', settings: {} },
      { grpcPort: -1, watch: false, maxConfigBytes: 4096 },
    );
    try {
      const big = rules(100, 9);
      one.write(big);
      assert.equal(await svc.reload('test'), false);
      assert.deepEqual(rejected(logs)!.problems, [
        `policies.yaml: the config is ${Buffer.byteLength(big)} bytes; at most 4096 (--max-config-bytes)`,
      ]);
      assert.equal((await check(svc.httpPort, { tenant: 't1' })).json.statuses[0].limit, 5);
    } finally {
      await svc.close();
      one.remove();
    }
  });

  test('config over --max-rules at start: the service does not start, and says why', async () => {
    const one = new TempConfig(rules(20, 5));
    try {
      await assert.rejects(
        start(one.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false, maxRules: 10 }),
        (e: unknown) => {
          assert.ok(e instanceof ConfigError);
          assert.deepEqual(e.problems, ['policies.yaml: the config holds 21 rules; at most 10 (--max-rules)']);
          return true;
        },
      );
    } finally {
      one.remove();
    }
  });

  test('an invalid reload built off the thread keeps the old config and lists every problem with its place', async () => {
    const one = new TempConfig(rules(2, 5));
    const { svc, logs } = await start(one.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false });
    try {
      one.write(
        'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight, requests_per_unit: 2 }\n',
      );
      assert.equal(await svc.reload('test'), false);
      assert.match(
        String(rejected(logs)!.problems),
        /policies\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: invalid rate limit unit 'fortnight'/,
      );
      assert.equal((await check(svc.httpPort, { tenant: 't1' })).json.statuses[0].limit, 5);
    } finally {
      await svc.close();
      one.remove();
    }
  });
});
