// `npm test` without a Redis starts one (scripts/ensure-redis.mjs) and must not leave it running: the
// redis-server it started is stopped by the stop() it returns, and a Redis that was already there is never touched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, ping, redisUrl } from '../../packages/testing/src/harness.js';

test('ensureRedis stops the redis-server it started, and leaves one it found alone', async () => {
  const { ensureRedis } = (await import(new URL('../../scripts/ensure-redis.mjs', import.meta.url).href)) as {
    ensureRedis: () => Promise<{ started: boolean; stop: () => void }>;
  };
  const saved = process.env.REDIS_URL;
  const shared = redisUrl();
  const port = await freePort();
  try {
    process.env.REDIS_URL = `redis://127.0.0.1:${port}`;
    const mine = await ensureRedis();
    assert.equal(mine.started, true);
    assert.equal(ping(port), true, 'no redis-server answers where ensureRedis said it started one');
    mine.stop();
    assert.equal(ping(port), false, `the redis-server on ${port} is still running`);
    // The tests' own Redis answers already: it is used as it is, and stop() does not touch it.
    process.env.REDIS_URL = shared;
    const found = await ensureRedis();
    assert.equal(found.started, false);
    found.stop();
    assert.equal(ping(Number(new URL(shared).port || 6379)), true);
  } finally {
    if (saved === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = saved;
    if (ping(port))
      (await import('node:child_process')).execFileSync('redis-cli', ['-p', String(port), 'SHUTDOWN', 'NOSAVE']);
  }
});
