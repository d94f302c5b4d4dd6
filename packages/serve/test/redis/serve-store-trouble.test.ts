// Issue #37 findings 5 and 6 on the real service over loopback, each Redis this file's own on a spare port:
// store trouble is in the log (an unreachable Redis at start, a killed one, a frozen one, and the recovery,
// rate-limited), /readyz reports a Redis that does not answer whatever the failure mode, the JSON answers
// carry the store's `reason`; a Redis that can forget (an eviction policy that drops limiter keys, a
// restart) is named in the log, and a user whose ACL hides CONFIG is told what it cannot check.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { freePort, OwnRedis } from '../../../testing/src/harness.js';
import { post, start, TempConfig, type LogSink } from '../integration/serve-helpers.js';
import type { Settings } from '../../src/server/config/settings.js';
import type { RunningService } from '../../src/server/serve.js';

const CONFIG = `domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1000 }
`;

const cfg = new TempConfig(CONFIG);
after(() => cfg.remove());

/** Polls `cond` every 50 ms for up to `ms`: for processes (Redis, its client's reconnects) this test does not time. */
async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const lines = (logs: LogSink, msg: RegExp) => logs.lines.filter((l) => msg.test(String(l.msg)));
const LEVEL = { debug: 20, info: 30, warn: 40, error: 50 };

async function serve(extra: Partial<Settings>) {
  const settings: Partial<Settings> = {
    redisPrefix: `sluice-trouble-${process.pid}`,
    failureMode: 'open',
    redisTimeoutMs: 200,
    grpcPort: -1,
    logLevel: 'debug',
    ...extra,
  };
  return start(cfg.path, { name: 'store trouble', settings });
}

/** Runs `body` against a service on a redis-server of its own started with `redisArgs`; stops both after. */
async function withOwnRedis(
  redisArgs: string[],
  extra: Partial<Settings>,
  body: (server: OwnRedis, svc: RunningService, logs: LogSink) => Promise<void>,
): Promise<void> {
  const server = new OwnRedis(await freePort(), redisArgs);
  await server.start();
  try {
    const { svc, logs } = await serve({ redis: `redis://127.0.0.1:${server.port}`, ...extra });
    try {
      await body(server, svc, logs);
    } finally {
      server.proc?.kill('SIGCONT');
      await svc.close();
    }
  } finally {
    await server.destroy();
  }
}

const check = (port: number, user: string) => post(port, '/v1/check', { domain: 'api', descriptors: [{ user }] });
const json = (port: number, user: string) =>
  post(port, '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: user }] }] });
const readyz = (port: number) => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status);

describe('store trouble is logged (#37 finding 5)', () => {
  test('store trouble at start: a Redis that never answers is a warn line by the connect deadline, /readyz 503 on the open policy, and answers say reason store-error', async () => {
    const { svc, logs } = await serve({ redis: `redis://127.0.0.1:${await freePort()}`, redisConnectTimeoutMs: 300 });
    try {
      await until(
        () => lines(logs, /could not connect to Redis within 300 ms/).length === 1,
        5000,
        'the connect-timeout line',
      );
      assert.equal(lines(logs, /could not connect/)[0]!.level, LEVEL.warn);
      assert.equal(
        await readyz(svc.httpPort),
        503,
        'not ready while the store does not answer, though the open policy allows',
      );
      const r = await check(svc.httpPort, 'ann');
      assert.equal(r.status, 200);
      assert.equal(r.json.reason, 'store-error');
      assert.equal(r.json.statuses[0].reason, 'store-error');
      const j = await json(svc.httpPort, 'ann');
      assert.equal(j.json.overallCode, 'OK');
      assert.equal(j.json.statuses[0].reason, 'store-error');
    } finally {
      await svc.close();
    }
  });

  test('store trouble when Redis dies: one error line with the cause for the whole outage, not one per request; one line when it is back', async () => {
    await withOwnRedis([], {}, async (server, svc, logs) => {
      assert.equal((await check(svc.httpPort, 'bob')).json.reason, undefined, 'a decision Redis made has no reason');
      assert.equal(await readyz(svc.httpPort), 200);
      await server.stop();
      await until(() => lines(logs, /lost its connection to Redis/).length > 0, 5000, 'the disconnect line');
      const lost = lines(logs, /lost its connection to Redis/)[0]!;
      assert.equal(lost.level, LEVEL.error);
      assert.equal(typeof lost.cause, 'string');
      for (let i = 0; i < 200; i++) assert.equal((await check(svc.httpPort, `outage${i}`)).json.reason, 'store-error');
      assert.equal(await readyz(svc.httpPort), 503);
      const troubleLines = logs.lines.filter((l) => (l.level as number) >= LEVEL.warn && /Redis/.test(String(l.msg)));
      assert.equal(
        troubleLines.length,
        1,
        `200 decisions in an outage are one line, got ${JSON.stringify(troubleLines)}`,
      );
      await server.start(); // the same port, a new process
      await until(() => lines(logs, /answers the store again/).length === 1, 10_000, 'the recovery line');
      assert.equal(lines(logs, /answers the store again/)[0]!.level, LEVEL.info);
      await until(
        async () => (await check(svc.httpPort, 'bob')).json.reason === undefined,
        5000,
        'decisions on Redis again',
      );
      assert.equal(await readyz(svc.httpPort), 200);
    });
  });

  test('store trouble is not logged when the service closes its own connection', async () => {
    await withOwnRedis([], {}, async (_server, svc, logs) => {
      await until(() => lines(logs, /Redis settings read/).length > 0, 5000, 'the connection');
      await svc.close();
      await new Promise((r) => setTimeout(r, 300)); // the client's close events come after quit() resolves
      // The config's own note (no http_descriptors, for nginx) is not the store's trouble.
      assert.deepEqual(
        logs.lines.filter((l) => (l.level as number) >= LEVEL.warn && l.domain === undefined),
        [],
      );
    });
  });

  test('store trouble when Redis freezes (SIGSTOP): calls unanswered are an error line, the thaw a recovery line', async () => {
    await withOwnRedis([], {}, async (server, svc, logs) => {
      assert.equal((await check(svc.httpPort, 'cy')).status, 200);
      server.proc!.kill('SIGSTOP');
      for (let i = 0; i < 20; i++) assert.equal((await check(svc.httpPort, `frozen${i}`)).json.reason, 'store-error');
      assert.equal(await readyz(svc.httpPort), 503);
      const frozen = lines(logs, /not answering the store/);
      assert.equal(frozen.length, 1);
      assert.match(String(frozen[0]!.cause), /no answer within 'timeoutMs' 200/, JSON.stringify(frozen));
      server.proc!.kill('SIGCONT');
      await until(
        async () => (await check(svc.httpPort, 'cy')).json.reason === undefined,
        5000,
        'answers after the thaw',
      );
      // The recovery is told once Redis has answered steadily (RECOVERY_SETTLE_MS), not at its first answer.
      await until(async () => lines(logs, /answers the store again/).length > 0, 5000, 'the recovery line');
      assert.equal(lines(logs, /answers the store again/).length, 1);
    });
  });
});

describe('store trouble is logged per outage (#45 finding 9)', () => {
  test('store-trouble log budget per outage: after a blip, a CLIENT PAUSE gets its error line at once and an OOM under noeviction its own; each recovery names the server and the whole outage', async () => {
    await withOwnRedis(['--maxmemory-policy', 'noeviction'], {}, async (server, svc, logs) => {
      const cli = (...a: string[]) =>
        execFileSync('redis-cli', ['-p', String(server.port), ...a], { encoding: 'utf8' }).trim();
      const name = `127.0.0.1:${server.port}`;
      const downLines = () =>
        lines(logs, /lost its connection to Redis|not answering the store|could not connect to Redis/).filter(
          (l) => l.server === name,
        );
      const upLines = () => lines(logs, /answers the store again/);
      assert.equal((await check(svc.httpPort, 'dee')).json.reason, undefined);
      // The blip: Redis killed and back at once.
      await server.stop();
      await until(() => downLines().length === 1, 5000, "the blip's line");
      await server.start();
      await until(
        async () => (await check(svc.httpPort, 'blip'), upLines().length === 1),
        10_000,
        "the blip's recovery line",
      );
      assert.equal(upLines()[0]!.server, name);
      // Right after it, a 3 s CLIENT PAUSE: its line comes with its first failed call, not 30 s later.
      cli('CLIENT', 'PAUSE', '3000', 'ALL');
      const pausedAt = Date.now();
      assert.equal((await check(svc.httpPort, 'paused')).json.reason, 'store-error');
      await until(() => downLines().length === 2, 1000, "the pause's line, at once");
      assert.ok(Date.now() - pausedAt < 1500, `logged ${Date.now() - pausedAt} ms into the pause`);
      assert.match(String(downLines()[1]!.cause), /no answer within 'timeoutMs' 200/);
      // Decisions go on (an outage ends on answers): the recovery comes 2 s after the pause ends.
      await until(
        async () => (await check(svc.httpPort, 'during'), upLines().length === 2),
        10_000,
        "the pause's recovery line",
      );
      const paused = upLines()[1]!;
      assert.equal(paused.server, name);
      assert.ok(
        (paused.downMs as number) >= 2500 && (paused.downMs as number) < 4000,
        `the whole pause, ${paused.downMs} ms`,
      );
      // Then Redis at maxmemory under noeviction: writes fail with OOM, many calls, one line, one recovery.
      const used = Number(/used_memory:(\d+)/.exec(cli('INFO', 'memory'))![1]);
      cli('CONFIG', 'SET', 'maxmemory', String(used));
      for (let i = 0; i < 100; i++) await check(svc.httpPort, `oom${i}`);
      await until(() => downLines().length === 3, 1000, 'the OOM line');
      assert.match(String(downLines()[2]!.cause), /OOM/);
      cli('CONFIG', 'SET', 'maxmemory', '0');
      await until(
        async () => (await check(svc.httpPort, 'after')).json.reason === undefined && upLines().length === 3,
        10_000,
        'the OOM recovery line',
      );
      assert.equal(downLines().length, 3, `three outages, three lines: ${JSON.stringify(downLines())}`);
      assert.equal(upLines()[2]!.server, name);
    });
  });
});

describe('Redis that forgets (#37 finding 6)', () => {
  for (const policy of ['volatile-lru', 'allkeys-random']) {
    test(`redis that forgets: maxmemory-policy ${policy} is a warn line at start naming the safe settings`, async () => {
      await withOwnRedis(['--maxmemory', '64mb', '--maxmemory-policy', policy], {}, async (server, svc, logs) => {
        await until(() => lines(logs, /Redis settings read/).length > 0, 5000, 'the settings check');
        const warned = lines(logs, /maxmemory-policy is/);
        assert.equal(warned.length, 1);
        assert.equal(warned[0]!.level, LEVEL.warn);
        assert.equal(warned[0]!.maxmemoryPolicy, policy);
        assert.match(String(warned[0]!.msg), /allkeys-lru, allkeys-lfu or noeviction/);
      });
    });
  }

  test('redis that forgets: allkeys-lru is read and not warned of', async () => {
    await withOwnRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'], {}, async (server, svc, logs) => {
      await until(() => lines(logs, /Redis settings read/).length > 0, 5000, 'the settings check');
      assert.equal(lines(logs, /Redis settings read/)[0]!.maxmemoryPolicy, 'allkeys-lru');
      assert.equal(lines(logs, /maxmemory-policy is/).length, 0);
    });
  });

  test('redis that forgets: a restart (a new run_id) is a warn line', async () => {
    await withOwnRedis([], {}, async (server, svc, logs) => {
      await until(() => lines(logs, /Redis settings read/).length > 0, 5000, 'the settings check');
      const before = lines(logs, /Redis settings read/)[0]!.runId;
      await server.stop();
      await server.start();
      await until(() => lines(logs, /a different Redis process answers/).length === 1, 10_000, 'the restart line');
      const restarted = lines(logs, /a different Redis process answers/)[0]!;
      assert.equal(restarted.level, LEVEL.warn);
      assert.equal(restarted.previousRunId, before);
      assert.notEqual(restarted.runId, before);
    });
  });

  test('redis that forgets: a user whose ACL refuses CONFIG is told the policy could not be read', async () => {
    await withOwnRedis(
      ['--user', 'limiter', 'on', '>limiter-pw', '~*', '+@all', '-config'],
      { redisUsername: 'limiter', redisPassword: 'limiter-pw' },
      async (server, svc, logs) => {
        await until(() => lines(logs, /Redis settings read/).length > 0, 5000, 'the settings check');
        const refused = lines(logs, /cannot read Redis's maxmemory-policy/);
        assert.equal(refused.length, 1);
        assert.match(String(refused[0]!.cause), /NOPERM/);
        assert.equal((await check(svc.httpPort, 'dee')).json.reason, undefined, 'decisions need no CONFIG');
      },
    );
  });
});
