// The store contracts of express-rate-limit and @nestjs/throttler, as their own store suites state them
// (express-rate-limit's test/library/memory-store-test.ts and test/external/stores, @nestjs/throttler's
// src/throttler.service.spec.ts), run on sluice's adapters over any sluice store. Time is a manual clock
// (a RedisStore under test takes `clock: 'client'`), never a sleep.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import express from 'express';
import { rateLimit, type Options } from 'express-rate-limit';
import { SluiceStore, type SluiceStoreOptions } from '../../src/compat/express-rate-limit.js';
import { SluiceThrottlerStorage, type ThrottlerAlgorithm } from '../../src/compat/nestjs-throttler.js';
import type { Store } from '../../src/stores/store.js';
import { listen, manualClock, until } from './http-adapter.js';

const minute = 60_000;

/** `make` returns a fresh sluice store each call; keys are unique per test, so a shared Redis needs no flush. */
export function expressRateLimitStoreContract(name: string, make: () => Store): void {
  let n = 0;
  const setup = (windowMs = minute, extra: SluiceStoreOptions = {}) => {
    const c = manualClock(1_800_000_000_000); // a multiple of every window used here: tests start at a window's start
    const store = new SluiceStore({ store: make(), clock: c.clock, prefix: `erl-${++n}`, ...extra });
    store.init({ windowMs, limit: 5 } as Options);
    return { c, store, key: `${name}:test-store:${n}` };
  };

  test(`${name}: express-rate-limit store: sets the value to 1 on the first increment, then counts each`, async () => {
    const { store, key } = setup();
    assert.equal((await store.increment(key)).totalHits, 1);
    assert.equal((await store.increment(key)).totalHits, 2);
    // Every hit counts, over express-rate-limit's limit too: it decides, the store counts.
    for (let i = 3; i <= 8; i++) assert.equal((await store.increment(key)).totalHits, i);
  });

  test(`${name}: express-rate-limit store: decrement gives one back, never below zero`, async () => {
    const { store, key } = setup();
    await store.increment(key);
    await store.increment(key);
    await store.decrement(key);
    assert.equal((await store.increment(key)).totalHits, 2);
    const other = `${key}:other`;
    await store.decrement(other);
    assert.equal((await store.increment(other)).totalHits, 1);
  });

  test(`${name}: express-rate-limit store: resetKey forgets one key; get reads without counting`, async () => {
    const { store, key } = setup();
    assert.equal(
      (await store.get(key)).totalHits,
      0,
      'a key never seen has no hits (express-rate-limit: undefined; docs/migrating.md)',
    );
    await store.increment(key);
    await store.increment(key);
    const info = await store.get(key);
    assert.equal(info.totalHits, 2);
    assert.ok(info.resetTime instanceof Date);
    await store.resetKey(key);
    assert.equal((await store.get(key)).totalHits, 0);
    assert.equal((await store.increment(key)).totalHits, 1);
  });

  // Regression, issue 49 finding 7: get() answered undefined for a key decremented to 0 hits, where
  // express-rate-limit's MemoryStore ('does not decrement the key below 0') and rate-limit-redis answer it.
  test(`${name}: express-rate-limit store: get answers totalHits 0 for a key decremented to 0, as both peers do`, async () => {
    const { store, key } = setup();
    await store.increment(key);
    await store.decrement(key);
    await store.decrement(key);
    const info = await store.get(key);
    assert.notEqual(info, undefined);
    assert.equal(info?.totalHits, 0);
    assert.ok(info?.resetTime instanceof Date);
  });

  test(`${name}: express-rate-limit store: the count starts again when the window is over, and resetTime is its end`, async () => {
    const { c, store, key } = setup(50);
    const first = await store.increment(key);
    assert.equal(first.resetTime?.getTime(), c.now + 50);
    await store.increment(`${key}:two`);
    c.now += 10;
    assert.equal(
      (await store.increment(key)).resetTime?.getTime(),
      c.now + 40,
      'windows are aligned to the epoch, not to the first hit',
    );
    c.now += 50;
    assert.equal((await store.increment(key)).totalHits, 1);
    assert.equal((await store.increment(`${key}:two`)).totalHits, 1);
  });

  // express-rate-limit's 'does not allow a Client object to be assigned to two keys': counts stay per key
  // and per window across window changes.
  test(`${name}: express-rate-limit store: across windows each key keeps its own count, and each answer is its own object`, async () => {
    const { c, store, key } = setup(100);
    await store.increment(`${key}-1`);
    c.now += 100;
    await store.increment(`${key}-1`);
    await store.increment(`${key}-2`);
    c.now += 100;
    await store.increment(`${key}-1`);
    await store.increment(`${key}-1`);
    let returnValue1 = await store.increment(`${key}-1`);
    assert.equal(returnValue1.totalHits, 3);
    const returnValue3 = await store.increment(`${key}-3`);
    assert.notEqual(returnValue1, returnValue3);
    assert.equal(returnValue3.totalHits, 1);
    returnValue1 = await store.increment(`${key}-1`);
    assert.equal(returnValue1.totalHits, 4);
  });

  test(`${name}: express-rate-limit store: sliding-window counts the last window's hits by how much of it is left`, async () => {
    const { c, store, key } = setup(minute, { algorithm: 'sliding-window' });
    for (let i = 0; i < 4; i++) await store.increment(key);
    c.now += minute + minute / 4; // a quarter into the next window: 3/4 of the last one's 4 hits still count
    assert.equal((await store.increment(key)).totalHits, 4);
  });

  test(`${name}: express-rate-limit store: two prefixes on one sluice store keep their counts apart`, async () => {
    const shared = make();
    const c = manualClock();
    const a = new SluiceStore({ store: shared, clock: c.clock, prefix: `a-${++n}` });
    const b = new SluiceStore({ store: shared, clock: c.clock, prefix: `b-${n}` });
    a.init({ windowMs: minute } as Options);
    b.init({ windowMs: minute } as Options);
    const key = `${name}:shared:${n}`;
    await a.increment(key);
    await a.increment(key);
    assert.equal((await b.increment(key)).totalHits, 1);
  });

  test(`${name}: express-rate-limit store: in express-rate-limit on Express, 3 pass, the 4th gets 429, a skipped failure is given back`, async () => {
    const c = manualClock();
    const app = express();
    const store = new SluiceStore({ store: make(), clock: c.clock, prefix: `app-${++n}` });
    app.use(
      rateLimit({
        windowMs: minute,
        limit: 3,
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        skipFailedRequests: true,
        keyGenerator: () => `${name}:client`,
        store,
      }),
    );
    app.get('/', (_req, res) => void res.send('ok'));
    app.get('/missing', (_req, res) => void res.status(404).send('no'));
    const r = await listen(createServer(app));
    try {
      const get = async (path = '/') => {
        const res = await fetch(`${r.url}${path}`);
        await res.text();
        return res;
      };
      assert.equal((await get('/missing')).status, 404);
      // express-rate-limit decrements once the response has finished, after the client has it.
      await until(async () => (await store.get(`${name}:client`)).totalHits === 0, 'the 404 to be given back');
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await get()).status);
      assert.deepEqual(statuses, [200, 200, 200], 'the 404 was given back (decrement)');
      const refused = await get();
      assert.equal(refused.status, 429);
      assert.match(refused.headers.get('ratelimit') ?? '', /^limit=3, remaining=0, reset=\d+$/);
    } finally {
      await r.close();
    }
  });
}

/**
 * rate-limit-redis's store suite (test/store-test.ts of express-rate-limit/rate-limit-redis), its public-API
 * cases: what `increment`, `decrement`, `resetKey` and `get` answer. Its assertions on Redis's own keys
 * (`GET rl:<key>`, `PTTL`) are its layout, not its contract, and read here as the answers' `totalHits` and
 * `resetTime` (the clock starts at a window's start, where an epoch-aligned window and one started by the
 * first hit end alike). The cases of its script's internals (PTTL 0, `sendCommand`'s `this`) have no
 * counterpart: sluice's store takes a client, not a send function.
 */
export function rateLimitRedisStoreContract(name: string, make: () => Store): void {
  let n = 0;
  const setup = (windowMs: number, extra: SluiceStoreOptions = {}) => {
    const c = manualClock(1_800_000_000_000);
    const store = new SluiceStore({ store: make(), clock: c.clock, prefix: `rlr-${++n}`, ...extra });
    store.init({ windowMs } as Options);
    return { c, store, key: `${name}:rlr:${n}` };
  };
  const title = (t: string) => `${name}: rate-limit-redis store: ${t}`;

  test(title('supports custom prefixes: two prefixes count apart'), async () => {
    const { c, store, key } = setup(10, { prefix: `test-${n + 1}` });
    const other = new SluiceStore({ store: make(), clock: c.clock, prefix: `other-${n}` });
    other.init({ windowMs: 10 } as Options);
    assert.equal((await store.increment(key)).totalHits, 1);
    assert.equal((await other.increment(key)).totalHits, 1);
  });

  test(title('sets the value to 1 on first call to increment, expiring windowMs later'), async () => {
    const { c, store, key } = setup(10);
    const { totalHits, resetTime } = await store.increment(key);
    assert.equal(totalHits, 1);
    assert.equal(resetTime?.getTime(), c.now + 10);
  });

  test(title('increments the key when increment is called'), async () => {
    const { store, key } = setup(10);
    await store.increment(key);
    assert.equal((await store.increment(key)).totalHits, 2);
  });

  test(title('decrements the key when decrement is called'), async () => {
    const { store, key } = setup(10);
    await store.increment(key);
    await store.increment(key);
    await store.decrement(key);
    assert.equal((await store.increment(key)).totalHits, 2);
  });

  test(title('resets the count for a key when resetKey is called'), async () => {
    const { store, key } = setup(10);
    await store.increment(key);
    await store.increment(key);
    await store.resetKey(key);
    assert.equal((await store.increment(key)).totalHits, 1);
  });

  test(title('fetches the count and a reset time for a key when get is called'), async () => {
    const { store, key } = setup(10);
    await store.increment(key);
    await store.increment(key);
    const info = await store.get(key);
    assert.equal(info.totalHits, 2);
    assert.ok(info.resetTime instanceof Date);
  });

  test(title('resets the count for all the keys when the window is over'), async () => {
    const { c, store, key } = setup(50);
    await store.increment(`${key}-one`);
    await store.increment(`${key}-two`);
    c.now += 60;
    assert.equal((await store.get(`${key}-one`)).totalHits, 0);
    assert.equal((await store.get(`${key}-two`)).totalHits, 0);
  });

  test(title('starts a new window with count 1 when the last one expired'), async () => {
    const { c, store, key } = setup(50);
    assert.equal((await store.increment(key)).totalHits, 1);
    c.now += 51;
    const afterExpiry = await store.increment(key);
    assert.equal(afterExpiry.totalHits, 1);
    assert.ok(afterExpiry.resetTime!.getTime() - c.now <= 50);
  });

  test(title('resetExpiryOnChange: true is refused with the way forward (a difference: docs/migrating.md)'), () => {
    assert.throws(
      () => new SluiceStore({ store: make(), resetExpiryOnChange: true } as never),
      /'resetExpiryOnChange' is not supported, got true/,
    );
  });
}

/**
 * @nestjs/throttler's storage contract; `algorithm` defaults to the storage's own ('sliding-log'). The
 * cases whose numbers are a log's (when a hit expires, what a raised limit sees) run for the log and the
 * fixed window (the clock starts at a window's start); the buckets and the sliding estimate refill or
 * weigh differently, and run the rest.
 */
export function throttlerStorageContract(name: string, make: () => Store, algorithm?: ThrottlerAlgorithm): void {
  let n = 0;
  const counted = algorithm === undefined || algorithm === 'sliding-log' || algorithm === 'fixed-window';
  const exact = (title: string, body: () => Promise<void>) => void (counted && test(title, body));
  const setup = () => {
    const c = manualClock();
    const storage = new SluiceThrottlerStorage({
      store: make(),
      clock: c.clock,
      prefix: `t${++n}`,
      ...(algorithm === undefined ? {} : { algorithm }),
    });
    return { c, storage, key: (k: string) => `${name}:${k}:${n}` };
  };

  exact(`${name}: throttler storage: increments the request count`, async () => {
    const { storage, key } = setup();
    const r = await storage.increment(key('test'), 1000, 1, 0, 'test');
    assert.deepEqual(r, { totalHits: 1, timeToExpire: 1, isBlocked: false, timeToBlockExpire: 0 });
  });

  test(`${name}: throttler storage: keys are independent of each other over blocking and unblocking`, async () => {
    const { c, storage, key } = setup();
    for (let i = 0; i < 10; i++) {
      assert.equal((await storage.increment(key('key1'), 100, 3, 100, 'test')).isBlocked, false);
      await storage.increment(key('key2'), 100, 3, 100, 'test');
      await storage.increment(key('key2'), 100, 3, 100, 'test');
      c.now += 50;
    }
  });

  test(`${name}: throttler storage: without a block duration it refuses over the limit instead of resetting`, async () => {
    const { storage, key } = setup();
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await storage.increment(key('no-block'), 1000, 2, 0, 'test'));
    assert.deepEqual(
      results.map((r) => r.isBlocked),
      [false, false, true, true, true],
    );
    assert.equal(results[2]!.totalHits, 3);
    assert.ok(results[2]!.timeToBlockExpire > 0);
  });

  if (algorithm === undefined || algorithm === 'sliding-log') {
    test(`${name}: throttler storage: reports when the oldest hit expires as the time to wait`, async () => {
      const { c, storage, key } = setup();
      await storage.increment(key('oldest'), 10_000, 1, 0, 'test');
      c.now += 1100;
      const r = await storage.increment(key('oldest'), 10_000, 1, 0, 'test');
      assert.equal(r.isBlocked, true);
      assert.equal(r.timeToBlockExpire, 9);
    });
  }

  test(`${name}: throttler storage: blocks every request for a limit of zero`, async () => {
    const { storage, key } = setup();
    const r = await storage.increment(key('zero'), 1000, 0, 0, 'test');
    assert.equal(r.isBlocked, true);
    assert.equal(r.timeToBlockExpire, 1);
  });

  exact(
    `${name}: throttler storage: lets requests through again once the earlier hits expire; refused retries are not recorded`,
    async () => {
      const { c, storage, key } = setup();
      await storage.increment(key('no-block'), 100, 2, 0, 'test');
      await storage.increment(key('no-block'), 100, 2, 0, 'test');
      for (let i = 0; i < 5; i++) {
        c.now += 15;
        assert.equal((await storage.increment(key('no-block'), 100, 2, 0, 'test')).isBlocked, true);
      }
      c.now += 100;
      const r = await storage.increment(key('no-block'), 100, 2, 0, 'test');
      assert.equal(r.isBlocked, false);
      assert.equal(r.totalHits, 1);
    },
  );

  exact(`${name}: throttler storage: hits expire without timers`, async () => {
    const { c, storage, key } = setup();
    await storage.increment(key('expiring'), 50, 2, 50, 'test');
    await storage.increment(key('expiring'), 50, 2, 50, 'test');
    c.now += 70;
    const r = await storage.increment(key('expiring'), 50, 2, 50, 'test');
    assert.equal(r.totalHits, 1);
    assert.equal(r.isBlocked, false);
  });

  test(`${name}: throttler storage: a block lasts blockDuration past the ttl, then the key counts afresh`, async () => {
    const { c, storage, key } = setup();
    await storage.increment(key('blocked'), 50, 1, 1000, 'test');
    const blocked = await storage.increment(key('blocked'), 50, 1, 1000, 'test');
    assert.deepEqual([blocked.isBlocked, blocked.timeToBlockExpire], [true, 1]);
    c.now += 100; // the ttl is long over, the block is not
    assert.equal((await storage.increment(key('blocked'), 50, 1, 1000, 'test')).isBlocked, true);
    c.now += 900;
    assert.deepEqual(await storage.increment(key('blocked'), 50, 1, 1000, 'test'), {
      totalHits: 1,
      timeToExpire: 1,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
  });

  // Regression, issue 49 finding 4: the window kept the hits through a block shorter than the ttl, so the
  // key stayed refused after the block ended ({ totalHits: 3, isBlocked: true }).
  test(`${name}: throttler storage: with blockDuration shorter than ttl, the key counts afresh when the block ends`, async () => {
    const { c, storage, key } = setup();
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await storage.increment(key('short-block'), 1000, 2, 300, 'test'));
    assert.deepEqual(
      hits.map((r) => r.isBlocked),
      [false, false, true],
    );
    assert.equal(hits[2]!.timeToBlockExpire, 1, 'the wait is the block, not the hits the window held');
    c.now += 100;
    assert.equal((await storage.increment(key('short-block'), 1000, 2, 300, 'test')).isBlocked, true, 'still blocked');
    c.now += 250;
    const after = await storage.increment(key('short-block'), 1000, 2, 300, 'test');
    assert.deepEqual([after.totalHits, after.isBlocked, after.timeToBlockExpire], [1, false, 0]);
    assert.equal((await storage.increment(key('short-block'), 1000, 2, 300, 'test')).totalHits, 2);
    assert.equal(
      (await storage.increment(key('short-block'), 1000, 2, 300, 'test')).isBlocked,
      true,
      'and blocks again at the limit',
    );
  });

  exact(
    `${name}: throttler storage: a route's own limit decides on the same key's state, and throttler names keep apart`,
    async () => {
      const { storage, key } = setup();
      for (let i = 0; i < 3; i++)
        assert.equal((await storage.increment(key('k'), 1000, 3, 0, 'default')).isBlocked, false);
      assert.equal(
        (await storage.increment(key('k'), 1000, 5, 0, 'default')).totalHits,
        4,
        'a higher limit sees the same three hits',
      );
      assert.equal((await storage.increment(key('k'), 1000, 3, 0, 'default')).isBlocked, true);
      assert.equal((await storage.increment(key('k'), 1000, 3, 0, 'long')).totalHits, 1);
    },
  );
}
