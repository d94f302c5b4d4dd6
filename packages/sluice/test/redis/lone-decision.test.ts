// A lone decision of cost 1 on one fixed-size policy, on Redis time, takes the script's one-key path
// (driver.lua's single()) and, when allowed, comes back packed in one integer; every other verdict, and
// every batch, answers as before. These pin both paths through both clients: the answers, the TTL until
// idle, a rejection that changes nothing, and verdicts too large to pack.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import { compilePolicies } from '../../src/core/policy.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { escapeId, keyOf } from '../../src/stores/redis/keys.js';
import { scriptFor } from '../../src/stores/redis/scripts.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const { io, nr } = await connectBothClients();
const prefix = runPrefix('lone');
const clients = { ioredis: io, 'node-redis': nr };

for (const [name, client] of Object.entries(clients)) {
  test(`${name}: lone decisions count down, the denial carries retryAfterMs, and changes nothing`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    for (const algorithm of ['token-bucket', 'gcra', 'fixed-window'] as const) {
      const id = `count:${name}:${algorithm}:${Math.random()}`;
      const l = new Limiter({ policy: { name: 'p', algorithm, limit: 3, window: '1h' }, store });
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const d = await l.limit(id);
        assert.equal(d.allowed, true, `${algorithm} decision ${i}`);
        assert.equal(d.retryAfterMs, 0);
        assert.ok(d.resetAfterMs > 0 && d.resetAfterMs <= 3_600_000, `${algorithm} resetAfterMs ${d.resetAfterMs}`);
        remaining.push(d.remaining);
      }
      assert.deepEqual(remaining, [2, 1, 0], algorithm);
      const key = keyOf(prefix, escapeId(id), 'p');
      const before = [await io.getBuffer(key), await io.pexpiretime(key)];
      const denied = await l.limit(id);
      assert.equal(denied.allowed, false, algorithm);
      assert.equal(denied.remaining, 0);
      assert.ok(denied.retryAfterMs > 0, `${algorithm} retryAfterMs ${denied.retryAfterMs}`);
      assert.deepEqual(
        [await io.getBuffer(key), await io.pexpiretime(key)],
        before,
        `${algorithm}: a denial changed the key`,
      );
    }
    assert.equal(store.stats.calls, store.stats.operations, 'one script call per lone decision');
    assert.equal(store.stats.fallbacks, 0);
  });

  test(`${name}: a lone decision's TTL is the time until idle`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    const id = `ttl:${name}:${Math.random()}`;
    const l = new Limiter({ policy: { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '1s' }, store });
    await l.limit(id); // one token refills in 100 ms
    const ttl = await io.pttl(keyOf(prefix, escapeId(id), 'tb'));
    assert.ok(ttl > 50 && ttl <= 100, `PTTL ${ttl}`);
  });

  test(`${name}: verdicts too large to pack in one integer come back whole, alone and in a batch`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    // remaining + 1 at 2^21 and above, and resetAfterMs at 2^32 and above, take the four-number reply.
    const wide = new Limiter({ policy: { name: 'wide', algorithm: 'gcra', limit: 5_000_000, window: '1h' }, store });
    const long = new Limiter({
      policy: { name: 'long', algorithm: 'token-bucket', limit: 1, window: 5_000_000_000 },
      store,
    });
    // remaining + 1 = 2^21 with an odd resetAfterMs (3): packed, it would need 2^53 + 3, which a double rounds.
    const edge = new Limiter({
      policy: { name: 'edge', algorithm: 'token-bucket', limit: 2 ** 21, window: 3 * 2 ** 21 },
      store,
    });
    for (const batch of [1, 3]) {
      const ids = Array.from({ length: batch }, () => `wide:${name}:${Math.random()}`);
      const [w, g, e] = await Promise.all([wide, long, edge].map((l) => Promise.all(ids.map((id) => l.limit(id)))));
      for (const d of w!) assert.deepEqual([d.allowed, d.remaining, d.retryAfterMs], [true, 4_999_999, 0]);
      for (const d of g!) {
        assert.deepEqual([d.allowed, d.remaining], [true, 0]);
        assert.equal(d.resetAfterMs, 5_000_000_000);
      }
      for (const d of e!) assert.deepEqual([d.allowed, d.remaining, d.resetAfterMs], [true, 2 ** 21 - 1, 3]);
    }
    assert.equal(store.stats.fallbacks, 0);
  });
}

test('a function name fits in an inline Redis string (44 bytes) and still carries the whole SHA1 of its library', async () => {
  const names = new Set<string>();
  for (const limit of [1, 2, 1000]) {
    for (const algorithm of ['token-bucket', 'gcra', 'fixed-window', 'sliding-log'] as const) {
      const script = scriptFor(compilePolicies([{ name: 'p', algorithm, limit, window: '1h' }]), false);
      const digits = /^sluice_([0-9a-z]{31})$/.exec(script.fn)?.[1];
      assert.ok(digits !== undefined && script.fn.length <= 44, script.fn);
      let sha = 0n;
      for (const d of digits) sha = sha * 36n + BigInt(parseInt(d, 36));
      // The library's text but its name: code, registration and flags (different flags, another name).
      assert.equal(
        sha.toString(16).padStart(40, '0'),
        createHash('sha1').update(script.library.replaceAll(script.fn, '')).digest('hex'),
      );
      assert.ok(
        script.library.startsWith(`#!lua name=${script.fn}\n`) &&
          script.library.endsWith(
            `redis.register_function{function_name='${script.fn}', callback=run, flags={'allow-cross-slot-keys'}}`,
          ),
      );
      names.add(script.fn);
    }
  }
  assert.equal(names.size, 12);
  // And the name is what the store calls: a lone decision goes through FCALL of it.
  const store = new RedisStore({ client: io, prefix, timeoutMs: 2000 });
  const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 7, window: '1h' }, store });
  assert.equal((await l.limit(`name:${Math.random()}`)).remaining, 6);
  const listed = (await io.call('FUNCTION', 'LIST', 'LIBRARYNAME', scriptFor(l.policies, false).fn)) as unknown[];
  assert.equal(listed.length, 1);
});

for (const [name, client] of Object.entries(clients)) {
  test(`${name}: lone decisions of two policies of one algorithm, interleaved, each follow their own policy`, async () => {
    // single() keeps its policy in the library's upvalues: each library (one per policy) has its own.
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    const id = `two:${name}:${Math.random()}`;
    const two = new Limiter({ policy: { name: 'two', algorithm: 'token-bucket', limit: 2, window: '1h' }, store });
    const five = new Limiter({ policy: { name: 'five', algorithm: 'token-bucket', limit: 5, window: '1h' }, store });
    const seen: Array<[boolean, number]> = [];
    for (let i = 0; i < 3; i++) {
      for (const l of [two, five]) {
        const d = await l.limit(id);
        seen.push([d.allowed, d.remaining]);
      }
    }
    assert.deepEqual(seen, [
      [true, 1],
      [true, 4],
      [true, 0],
      [true, 3],
      [false, 0],
      [true, 2],
    ]);
    assert.equal(store.stats.fallbacks, 0);
  });
}

/**
 * Runs a decision in a fresh process, on a client shaped like ioredis whose FCALL answers with `reply`
 * (JavaScript source), or never for 'never'; nothing else holds that process's event loop.
 */
function decideInChild(reply: string, timeoutMs: number): { status: number | null; out: string; ms: number } {
  const src = new URL('../../src/', import.meta.url).href;
  const code = `
    const { Limiter } = await import('${src}index.ts');
    const { RedisStore } = await import('${src}stores/redis/index.ts');
    const answer = () => ${reply === 'never' ? 'new Promise(() => {})' : reply};
    const client = { status: 'ready', evalsha: answer, eval: answer, call: answer, on() {} };
    const store = new RedisStore({ client, timeoutMs: ${timeoutMs}, onError: 'closed' });
    const d = await new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1h' }, store }).limit('k');
    console.log(JSON.stringify({ allowed: d.allowed, remaining: d.remaining, reason: d.reason ?? null }));`;
  const t = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: r.stdout.trim(), ms: performance.now() - t };
}

test('a call nothing else waits for still gets its timeout answer before the process exits, and an answered one does not hold the process for timeoutMs', () => {
  // The store's deadline timer holds the process while a call is unanswered: without it this process
  // would exit (code 13, a top-level await never settled) before the failure policy answered.
  const unanswered = decideInChild('never', 300);
  assert.equal(unanswered.status, 0, unanswered.out);
  assert.deepEqual(JSON.parse(unanswered.out), { allowed: false, remaining: 0, reason: 'store-error' });
  // Answered at once (remaining 4, packed), with a 60 s timeout: the process ends with its work, not 60 s later.
  const answered = decideInChild(`Promise.resolve(${5 * 2 ** 32 + 720000})`, 60_000);
  assert.equal(answered.status, 0, answered.out);
  assert.deepEqual(JSON.parse(answered.out), { allowed: true, remaining: 4, reason: null });
  assert.ok(answered.ms < 40_000, `the process lasted ${answered.ms.toFixed(0)} ms`);
});
