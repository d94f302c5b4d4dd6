// Issue 46 (findings 1 to 3) and issue 45's item 9, library half: a Redis that is not there is never
// silent. Each test is named after the bug it pins; each failed on main 09cdb73.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { Limiter } from '../../../sluice/src/limiter.js';
import { RedisStore, type RedisStoreEvent } from '../../../sluice/src/stores/redis/index.js';
import { Guard } from '../../src/index.js';
import { SluiceStore } from '../../../sluice/src/compat/express-rate-limit.js';
import { freePort, OwnRedis, runPrefix } from '../../../testing/src/harness.js';

const ROOT = resolve(import.meta.dirname, '../../../..');
const SECRET = 'a guard secret of sixteen bytes or more';

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const OUTAGE = new Set(['connect-timeout', 'disconnected', 'unanswered']);
const transitions = (events: RedisStoreEvent[]) =>
  events.filter((e) => OUTAGE.has(e.type) || e.type === 'recovered').map((e) => e.type);

/** Runs `code` (an ES module importing sluice's sources as `@/…`) in a child process; its exit, stdout and stderr. */
function runChild(
  code: string,
  env: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-loud-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const file = join(dir, 'app.ts');
    writeFileSync(file, code.replaceAll("'@/", `'${ROOT}/packages/sluice/src/`));
    const r = spawnSync(process.execPath, ['--import', 'tsx', file], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ...env },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a wrong Redis URL is not silent: one line on stderr names the server and what the store does meanwhile, and ioredis keeps its own output', async () => {
  const port = await freePort(); // nothing listens there
  const r = runChild(
    `import { Redis } from 'ioredis';
    import { Limiter } from '@/index.js';
    import { RedisStore } from '@/stores/redis/index.js';
    const client = new Redis(process.env.REDIS_URL);
    const store = new RedisStore({ client, prefix: 'sluice', timeoutMs: 50, onError: 'open', connectTimeoutMs: 300 });
    const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1s' }, store });
    const d = await limiter.limit('user:42');
    console.log(d.allowed, d.remaining, d.reason);
    for (let i = 0; i < 20; i++) await limiter.limit('user:42'); // more decisions in the same outage: no more lines
    await new Promise((r) => setTimeout(r, 300));
    client.disconnect();`,
    { REDIS_URL: `redis://127.0.0.1:${port}` },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'true 0 store-error');
  const ours = r.stderr.split('\n').filter((l) => l.startsWith('[sluice]'));
  assert.equal(ours.length, 1, `one line per outage, got:\n${r.stderr}`);
  assert.match(
    ours[0]!,
    new RegExp(
      `^\\[sluice\\] Redis at 127\\.0\\.0\\.1:${port} is not answering: no connection within 300 ms \\(connect ECONNREFUSED`,
    ),
  );
  assert.match(ours[0]!, /RedisStore allows every request \(onError 'open'; decisions carry reason 'store-error'\)/);
  assert.match(
    r.stderr,
    /\[ioredis\] Unhandled error event: Error: connect ECONNREFUSED/,
    "the client's own output is not swallowed",
  );
});

test("an application's own 'error' listener and logger: false quiet both the client's lines and sluice's", async () => {
  const port = await freePort();
  const r = runChild(
    `import { Redis } from 'ioredis';
    import { Limiter } from '@/index.js';
    import { RedisStore } from '@/stores/redis/index.js';
    const client = new Redis(process.env.REDIS_URL);
    client.on('error', () => {});
    const store = new RedisStore({ client, connectTimeoutMs: 200, logger: false });
    const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1s' }, store });
    console.log((await limiter.limit('k')).reason);
    await new Promise((r) => setTimeout(r, 300));
    client.disconnect();`,
    { REDIS_URL: `redis://127.0.0.1:${port}` },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'store-error');
  assert.equal(r.stderr, '');
});

test('onEvent sends one event per outage and one at recovery under OOM at maxmemory with noeviction, however the calls flap', async () => {
  const server = new OwnRedis(await freePort(), ['--maxmemory-policy', 'noeviction']);
  await server.start();
  const cli = (...a: string[]) =>
    execFileSync('redis-cli', ['-p', String(server.port), ...a], { encoding: 'utf8' }).trim();
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  client.on('error', () => {});
  const events: RedisStoreEvent[] = [];
  const store = new RedisStore({ client, prefix: runPrefix('oom'), timeoutMs: 500, onEvent: (e) => events.push(e) });
  // Keys of a 300 ms window expire while others are written: at maxmemory some calls pass and some fail with OOM.
  const limiter = new Limiter({ policy: { algorithm: 'fixed-window', limit: 5, window: '300ms' }, store });
  try {
    await limiter.limit('warm');
    const used = Number(/used_memory:(\d+)/.exec(cli('INFO', 'memory'))![1]);
    cli('CONFIG', 'SET', 'maxmemory', String(used + 300_000));
    let errors = 0;
    let answered = 0;
    for (let end = Date.now() + 3000, i = 0; Date.now() < end; ) {
      const batch = [];
      for (let k = 0; k < 50; k++) batch.push(limiter.limit(`k${i++ % 20_000}`));
      for (const d of await Promise.all(batch)) d.reason === 'store-error' ? errors++ : answered++;
    }
    assert.ok(errors > 0 && answered > 0, `the calls flapped (${errors} failed, ${answered} answered)`);
    cli('CONFIG', 'SET', 'maxmemory', '0');
    for (let end = Date.now() + 4000; Date.now() < end && !events.some((e) => e.type === 'recovered'); )
      await limiter.limit('after');
    assert.deepEqual(transitions(events), ['unanswered', 'recovered']);
    const down = events.find((e) => e.type === 'unanswered')!;
    assert.ok(down.type === 'unanswered' && /OOM/.test(down.cause), JSON.stringify(down));
    const up = events.find((e) => e.type === 'recovered')!;
    assert.ok(
      up.type === 'recovered' && up.failedCalls >= 1 && up.server === `127.0.0.1:${server.port}`,
      JSON.stringify(up),
    );
  } finally {
    client.disconnect();
    await server.destroy();
  }
});

test('onEvent sends one event per outage and one at recovery when writes time out and reads pass (CLIENT PAUSE WRITE), the guard and the limiter alike', async () => {
  const server = new OwnRedis(await freePort());
  await server.start();
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  client.on('error', () => {});
  const events: RedisStoreEvent[] = [];
  const store = new RedisStore({ client, prefix: runPrefix('pause'), timeoutMs: 100, onEvent: (e) => events.push(e) });
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1s' }, store });
  const guard = new Guard({ secret: SECRET, store });
  try {
    await limiter.limit('warm');
    await guard.check({ account: 'warm', ip: '198.51.100.1' });
    execFileSync('redis-cli', ['-p', String(server.port), 'CLIENT', 'PAUSE', '1500', 'WRITE']);
    const until = Date.now() + 1400;
    for (let i = 0; Date.now() < until; i++) {
      // A check is a read (MGET), which a write pause lets through; a record and a decision are writes.
      await Promise.all([
        guard.check({ account: `a${i}`, ip: '198.51.100.2' }),
        guard.record({ account: `a${i}`, ip: '198.51.100.2', success: false }),
        limiter.limit(`k${i}`),
      ]);
    }
    for (let end = Date.now() + 5000; Date.now() < end && !events.some((e) => e.type === 'recovered'); )
      await limiter.limit('after');
    assert.deepEqual(transitions(events), ['unanswered', 'recovered']);
  } finally {
    guard.close();
    client.disconnect();
    await server.destroy();
  }
});

test('onEvent sends one event per outage and one at recovery when Redis is killed and restarted, however often the client reconnects meanwhile', async () => {
  const server = new OwnRedis(await freePort());
  await server.start();
  const client = new Redis({ port: server.port, host: '127.0.0.1', retryStrategy: () => 20 }); // a reconnect every 20 ms
  client.on('error', () => {});
  const events: RedisStoreEvent[] = [];
  const store = new RedisStore({ client, prefix: runPrefix('kill'), timeoutMs: 200, onEvent: (e) => events.push(e) });
  const limiter = new Limiter({ policy: { algorithm: 'gcra', limit: 100, window: '1s' }, store });
  try {
    await limiter.limit('warm');
    await server.stop();
    for (let end = Date.now() + 1000; Date.now() < end; ) await limiter.limit('down');
    await server.start();
    for (let end = Date.now() + 8000; Date.now() < end && !events.some((e) => e.type === 'recovered'); )
      await limiter.limit('after');
    assert.deepEqual(transitions(events), ['disconnected', 'recovered']);
  } finally {
    client.disconnect();
    await server.destroy();
  }
});

test('a login guard on an unreachable Redis keeps counting failures in this process, says store-error in every verdict, and record() does not claim it counted on Redis', async () => {
  const port = await freePort();
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 200 });
  client.on('error', () => {});
  const events: RedisStoreEvent[] = [];
  const store = new RedisStore({
    client,
    prefix: 'login',
    timeoutMs: 50,
    onError: 'open',
    connectTimeoutMs: 100,
    onEvent: (e) => events.push(e),
  });
  let now = 1_700_000_000_000;
  const guard = new Guard({ secret: SECRET, store, clock: () => now });
  try {
    const actions: string[] = [];
    for (let i = 0; i < 12; i++) {
      const v = await guard.check({ account: 'alice', ip: '198.51.100.7' });
      actions.push(v.action);
      assert.equal(v.reasons[0], 'store-error', `verdict ${i}: ${JSON.stringify(v)}`);
      const r = await guard.record({ account: 'alice', ip: '198.51.100.7', success: false, password: `guess-${i}` });
      assert.deepEqual(r.reasons, ['store-error']);
      assert.equal(r.counted, true, 'counted in this process (the guard keeps local records while Redis is away)');
      assert.equal(r.consecutiveFailures, i + 1);
      now += 20_000;
    }
    assert.ok(
      actions.slice(5).every((a) => a !== 'allow'),
      `from the 6th attempt on, never a plain allow: ${actions.join(' ')}`,
    );
    assert.ok(
      events.some((e) => e.type === 'connect-timeout'),
      'the outage was told',
    );
  } finally {
    client.disconnect();
  }
});

test("express-rate-limit's SluiceStore names the outage's cause in its error, and the RedisStore logs it", async () => {
  const port = await freePort();
  const client = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 200 });
  client.on('error', () => {});
  const lines: string[] = [];
  const logger = {
    error: (m: string) => lines.push(m),
    warn: (m: string) => lines.push(m),
    info: (m: string) => lines.push(m),
  };
  const store = new SluiceStore({ store: new RedisStore({ client, timeoutMs: 50, connectTimeoutMs: 50, logger }) });
  store.init({ windowMs: 60_000, limit: 10 } as never);
  try {
    await new Promise((r) => setTimeout(r, 150));
    await assert.rejects(store.increment('k'), (e: Error) => {
      assert.match(
        e.message,
        /^\[sluice\] \[SluiceStore\] the store could not count this hit: Redis has not answered for \d+ ms \(.*ECONNREFUSED.*\); express-rate-limit's passOnStoreError decides$/,
      );
      return true;
    });
    await until(() => lines.length > 0, 2000, 'the outage line');
    assert.match(lines[0]!, /^\[sluice\] Redis at 127\.0\.0\.1:\d+ is not answering/);
  } finally {
    client.disconnect();
  }
});
