// RedisStore gathers the decisions of one turn of the event loop into one script call, where a turn is all
// the callbacks already due (the I/O callbacks of one poll, the immediates queued together), not one
// callback: a server decides each request in a callback of its own, and a flush on process.nextTick, which
// Node runs after every callback, sent each of its decisions as a script call of its own (issue 50: under
// `sluice serve`, 1.0 decision per Redis call). These pin the batching, the order of a key's decisions
// across callbacks, and that a lone decision made in an I/O callback still leaves before any timer.
import assert from 'node:assert/strict';
import { stat } from 'node:fs';
import { test } from 'node:test';
import { Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const { io, nr } = await connectBothClients();
const prefix = runPrefix('turn');

/** Runs `each(i)` for i < n, each in an immediate of its own, all queued now (so due in one turn). */
function inSeparateCallbacks<T>(n: number, each: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(
    Array.from(
      { length: n },
      (_, i) => new Promise<T>((resolve, reject) => setImmediate(() => each(i).then(resolve, reject))),
    ),
  );
}

for (const [name, client] of Object.entries({ ioredis: io, 'node-redis': nr })) {
  test(`${name}: decisions made in separate callbacks of one turn go in one script call (they went in one each)`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    await store.ready();
    const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 10, window: '1h' }, store });
    const run = Math.random();
    const decisions = await inSeparateCallbacks(20, (i) => l.limit(`batch:${name}:${run}:${i}`));
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.remaining]),
      Array.from({ length: 20 }, () => [true, 9]),
    );
    assert.deepEqual([store.stats.calls, store.stats.operations, store.stats.fallbacks], [1, 20, 0]);
  });

  test(`${name}: one key's decisions made in separate callbacks of one turn are decided in the order they were made`, async () => {
    const store = new RedisStore({ client, prefix, timeoutMs: 2000 });
    await store.ready();
    const l = new Limiter({ policy: { name: 'p', algorithm: 'fixed-window', limit: 3, window: '1h' }, store });
    const id = `order:${name}:${Math.random()}`;
    const decisions = await inSeparateCallbacks(5, () => l.limit(id));
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ],
    );
    assert.equal(store.stats.calls, 1);
  });
}

test('a lone decision made in an I/O callback is sent before a timer due at once fires', async () => {
  // A client shaped like ioredis that records when it is called and answers at once (allowed, remaining 4).
  // Its other commands (the health's CONFIG GET and INFO) are answered the same and not recorded.
  const sent: string[] = [];
  const answer = (command: unknown) => {
    if (command === 'FCALL' || command === 'evalsha') sent.push('script');
    return Promise.resolve(5 * 2 ** 32 + 720_000);
  };
  const client = { status: 'ready', evalsha: () => answer('evalsha'), eval: answer, call: answer, on() {} };
  const store = new RedisStore({ client, timeoutMs: 2000, onError: 'closed' });
  const l = new Limiter({ policy: { name: 'p', algorithm: 'gcra', limit: 5, window: '1h' }, store });
  const [decided] = await new Promise<[{ remaining: number; reason: unknown }, void]>((resolve, reject) => {
    stat('.', () => {
      // In the poll phase: the flush (setImmediate) runs in this turn's check phase, before any timer.
      const fired = new Promise<void>((r) => setTimeout(() => r(void sent.push('timer')), 0));
      Promise.all([l.limit('k'), fired]).then(resolve, reject);
    });
  });
  assert.deepEqual([decided.remaining, decided.reason], [4, undefined]);
  assert.deepEqual(sent, ['script', 'timer']);
});
