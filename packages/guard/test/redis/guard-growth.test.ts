// Issue 46 finding 4: the guard's Redis state grew without bound for 14 days. A new source address wrote a
// record kept 336 h even when check() blocked it; 5,000 blocked checks from random addresses in one IPv6
// /64 wrote 5,056 keys. Each test is named after what it pins, on the shared Redis under a prefix of its own.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { Guard, RedisGuardState } from '../../src/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const SECRET = 'growth test secret, long enough';
const DAY = 86_400_000;
let io: Redis;
const prefixes: string[] = [];

before(async () => {
  io = new Redis(redisUrl());
  await once(io, 'ready');
});

after(async () => {
  for (const p of prefixes) {
    const keys = await io.keys(`${p}:*`);
    if (keys.length > 0) await io.del(...keys);
  }
  io.disconnect();
});

function fresh(what: string): string {
  const p = runPrefix(what);
  prefixes.push(p);
  return p;
}

async function ttls(prefix: string, kind: RegExp): Promise<number[]> {
  const keys = (await io.keys(`${prefix}:*`)).filter((k) => kind.test(k));
  return Promise.all(keys.map((k) => io.pttl(k)));
}

test('blocked checks from random addresses in one IPv6 /64 write one address record and one subnet record, not one per address', async () => {
  const prefix = fresh('growth-64');
  const store = new RedisStore({ client: io, prefix, timeoutMs: 2000 });
  const guard = new Guard({ secret: SECRET, store, denyList: ['2001:db8:77:1::/64'] });
  for (let i = 0; i < 2000; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) =>
        guard.check({
          account: `victim${(i + j) % 7}`,
          ip: `2001:db8:77:1:${(i + j).toString(16)}:${((i + j) * 31).toString(16)}::9`,
        }),
      ),
    );
  }
  const keys = await io.keys(`${prefix}:*`);
  assert.equal(keys.filter((k) => k.includes('{gs:')).length, 2, keys.join('\n'));
  assert.ok(keys.length <= 2, `${keys.length} keys for 2,000 blocked checks`);
});

test('a source that never succeeded is kept its longest window (7 days), not two of them (14 days)', async () => {
  const prefix = fresh('growth-ttl');
  const store = new RedisStore({ client: io, prefix, timeoutMs: 2000 });
  const guard = new Guard({ secret: SECRET, store });
  await guard.record({ account: 'alice', ip: '198.51.100.23', success: false, password: 'guess' });
  const sources = await ttls(prefix, /\{gs:/);
  assert.equal(sources.length, 2);
  for (const t of sources) assert.ok(t > 7 * DAY - 60_000 && t <= 7 * DAY, `PTTL ${t}`);
});

test('under a flood of new sources and accounts, the records of those that never succeeded live the short window, and a familiar account keeps its own', async () => {
  const prefix = fresh('growth-flood');
  const store = new RedisStore({ client: io, prefix, timeoutMs: 2000 });
  const state = new RedisGuardState({ client: io, prefix, timeoutMs: 2000, maxRecords: 100 });
  let now = 1_800_000_000_000;
  const guard = new Guard({ secret: SECRET, store, state, clock: () => now });
  await guard.record({ account: 'owner', ip: '203.0.113.50', success: true }); // familiar from here for 30 days
  // 600 failures from new addresses on new accounts in one minute: 100 records last 10 s at that rate.
  for (let i = 0; i < 600; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) => {
        const n = i + j;
        const login = { account: `spray${n}`, ip: `${20 + (n >> 8)}.${n & 255}.9.9` };
        return guard.check(login).then(() => guard.record({ ...login, success: false, password: 'x' }));
      }),
    );
  }
  await guard.record({ account: 'owner', ip: '203.0.113.50', success: false, password: 'typo' }); // during the flood
  const shortWindow = 30 * 60_000;
  const late = (await ttls(prefix, /\{gs:/)).filter((t) => t > shortWindow + 1000);
  // The first few records, written before the rate was known, keep their week; all the others the short window.
  assert.ok(late.length <= 10, `${late.length} source records outlive the short window`);
  const accounts = (await io.keys(`${prefix}:{ga:*`)).filter((k) => !k.includes('}:p:'));
  const accountTtls = await Promise.all(accounts.map((k) => io.pttl(k)));
  assert.ok(accountTtls.filter((t) => t > shortWindow + 1000).length <= 11, 'the flood accounts live the short window');
  assert.ok(
    accountTtls.some((t) => t > 29 * DAY),
    "the owner's account, which has a familiar source, keeps its 30 days",
  );
  // A familiar path is untouched by the flood: the owner's typo does not make them a stranger.
  assert.equal((await guard.check({ account: 'owner', ip: '203.0.113.50' })).action, 'allow');
  now += 1;
});
