// Two Node processes, each with its own Guard on one Redis, see each other's failures: a spray split
// between them is still caught by the distinct-accounts signal, and an account's failures add up across
// them into one backoff. Each process alone stays under every threshold.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Guard, type GuardVerdict } from '../../src/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const prefix = runPrefix('guard-mp');
const workers: ChildProcess[] = [];

before(async () => {
  for (let i = 0; i < 2; i++)
    workers.push(
      fork(new URL('./guard-worker.ts', import.meta.url), [redisUrl(), prefix], { execArgv: ['--import', 'tsx'] }),
    );
  await Promise.all(workers.map((w) => once(w, 'message')));
});

after(async () => {
  for (const w of workers) w.send('exit');
  // Every key has a TTL; this run's are taken back anyway, so the shared server keeps nothing of it.
  const client = new Redis(redisUrl());
  for (const k of await client.keys(`${prefix}:*`)) await client.unlink(k);
  client.disconnect();
});

async function fail(w: ChildProcess, logins: { account: string; ip: string }[]): Promise<GuardVerdict> {
  const reply = once(w, 'message');
  w.send({ fail: logins });
  return ((await reply)[0] as { seen: GuardVerdict }).seen;
}

test('a spray split across two processes is caught as one; an account backs off on failures from both', async () => {
  const ip = '198.51.100.44';
  const spray = (from: number) => Array.from({ length: 5 }, (_, i) => ({ account: `sprayed-${from + i}`, ip }));
  // Five distinct accounts each: under ipDistinctAccounts (10) for either process alone.
  const first = await fail(workers[0]!, spray(0));
  assert.ok(!first.reasons.includes('ip-distinct-accounts'), `after 5: ${first.reasons}`);
  const second = await fail(workers[1]!, spray(5));
  assert.ok(second.reasons.includes('ip-distinct-accounts'), `after 10 from two processes: ${second.reasons}`);

  // A third guard, in this process, sees it too, and sees the account's four failures (two from each
  // process, each under freeFailures 3) as a backoff.
  const client = new Redis(redisUrl());
  // The store refuses calls until the client is ready (no offline queue); on a busy machine the two
  // workers can answer before this connection is up.
  await once(client, 'ready');
  try {
    await fail(workers[0]!, [
      { account: 'target', ip: '203.0.113.1' },
      { account: 'target', ip: '203.0.113.2' },
    ]);
    await fail(workers[1]!, [
      { account: 'target', ip: '203.0.113.3' },
      { account: 'target', ip: '203.0.113.4' },
    ]);
    const here = new Guard({
      secret: 'multi-process-secret-0123456789',
      store: new RedisStore({ client, prefix, timeoutMs: 5000, onError: 'closed' }),
    });
    assert.ok((await here.check({ account: 'x', ip })).reasons.includes('ip-distinct-accounts'));
    const target = await here.check({ account: 'target', ip: '192.0.2.200' });
    assert.ok(target.reasons.includes('account-backoff'), `target: ${JSON.stringify(target)}`);
    assert.equal(target.action, 'delay');
  } finally {
    client.disconnect();
  }
});
