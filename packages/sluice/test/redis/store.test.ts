// RedisStore's own rules on the shared standalone Redis: options rejected with the field named, the key
// layout (hash tags, escaped braces, the slot Redis computes), TTLs equal to the time until idle on Redis
// time, a bounded sliding log appended to as it was read, several policies in one key, no change on
// rejection, and EVALSHA with a reload only on NOSCRIPT.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter, SluiceError } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { escapeId, keyOf, slotOf } from '../../src/stores/redis/keys.js';
import { redisUrl, runPrefix } from '../../../testing/src/harness.js';

const io = new Redis(redisUrl());
await once(io, 'ready');
after(() => io.disconnect());
const prefix = runPrefix('store');

test('options: every bad field is named, with its value', () => {
  const bad: Array<[unknown, RegExp]> = [
    [undefined, /options must be an object/],
    [{}, /'client' is required/],
    [
      { client: {} },
      /'client' must be an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster, or a valkey-glide GlideClient or GlideClusterClient, got "Object"/,
    ],
    [{ client: io, prefix: 'a{b' }, /'prefix' must be a non-empty string without '\{' or '\}'.*got "a\{b"/],
    [{ client: io, timeoutMs: 0 }, /'timeoutMs' must be a positive number of milliseconds, got 0/],
    [
      { client: io, onError: 'ignore' },
      /'onError' must be 'open', 'closed' or \{ insurance: <share in \(0, 1\]> \}, got "ignore"/,
    ],
    [{ client: io, onError: { insurance: 2 } }, /'onError.insurance' must be this node's share.*got 2/],
    [{ client: io, clock: 'local' }, /'clock' must be 'server' or 'client', got "local"/],
    [{ client: io, maxBatch: 1.5 }, /'maxBatch' must be a positive integer, got 1.5/],
    [{ client: io, timeout: 50 }, /unknown option 'timeout'/],
  ];
  for (const [options, message] of bad) {
    assert.throws(
      () => new RedisStore(options as never),
      (e: unknown) => e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_OPTION' && message.test(e.message),
      String(message),
    );
  }
});

test('keys: the id is the hash tag; braces and backslashes are escaped one-to-one', async () => {
  assert.equal(keyOf('sluice', escapeId('user:42'), 'per-minute'), 'sluice:{user:42}:per-minute');
  const ids = ['{', '}', '\\', '\\(', '\\)', 'a{b}c', 'a\\(b\\)c', '}{', '{{}}', '\\\\'];
  assert.equal(new Set(ids.map(escapeId)).size, ids.length);
  for (const id of ids) assert.doesNotMatch(escapeId(id), /[{}]/);
  // CRC16-XMODEM mod 16384, checked against the values in Redis's CLUSTER KEYSLOT documentation
  // (cluster.test.ts compares with a live cluster).
  assert.equal(slotOf('somekey'), 11058);
  assert.equal(slotOf('hash_tag'), 2515);
});

test('TTL is the time until the state is idle, on Redis time', async () => {
  const store = new RedisStore({ client: io, prefix });
  const id = `ttl:${Math.random()}`;
  const tb = new Limiter({ policy: { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '1s' }, store });
  await tb.limit(id, { cost: 3 }); // 3 tokens refill in 300 ms
  const ttl = await io.pttl(keyOf(prefix, escapeId(id), 'tb'));
  assert.ok(ttl > 250 && ttl <= 300, `token bucket PTTL ${ttl}`);
  const fw = new Limiter({ policy: { name: 'fw', algorithm: 'fixed-window', limit: 10, window: '1h' }, store });
  await fw.limit(id);
  const fwTtl = await io.pttl(keyOf(prefix, escapeId(id), 'fw'));
  const [sec] = await io.time();
  const untilEdge = 3_600_000 - ((Number(sec) * 1000) % 3_600_000);
  assert.ok(fwTtl > 0 && fwTtl <= untilEdge + 1000, `fixed window PTTL ${fwTtl}, edge in ${untilEdge}`);
  const c = new Limiter({ policy: { name: 'c', algorithm: 'concurrency', limit: 2, window: '10s' }, store });
  await c.limit(id);
  const cTtl = await io.pttl(keyOf(prefix, escapeId(id), 'c'));
  assert.ok(cTtl > 9000 && cTtl <= 10_000, `concurrency PTTL ${cTtl}`);
  // A reward that empties the state deletes the key.
  await fw.reward(id, 1);
  assert.equal(await io.exists(keyOf(prefix, escapeId(id), 'fw')), 0);
});

test('a rejected request changes nothing: same value, same TTL', async () => {
  const store = new RedisStore({ client: io, prefix });
  const id = `reject:${Math.random()}`;
  const l = new Limiter({ policy: { name: 'log', algorithm: 'sliding-log', limit: 2, window: '1h' }, store });
  await l.limit(id);
  await l.limit(id);
  const key = keyOf(prefix, escapeId(id), 'log');
  const before = [await io.getBuffer(key), await io.pexpiretime(key)];
  for (let i = 0; i < 5; i++) assert.equal((await l.limit(id)).allowed, false);
  assert.deepEqual([await io.getBuffer(key), await io.pexpiretime(key)], before);
});

test('the sliding log stays bounded: at most `limit` entries of 16 bytes per key', async () => {
  let now = 1_000_000;
  const store = new RedisStore({ client: io, prefix, clock: 'client' });
  const id = `bounded:${Math.random()}`;
  const l = new Limiter({
    policy: { name: 'log', algorithm: 'sliding-log', limit: 20, window: 1000 },
    store,
    clock: () => now,
  });
  let longest = 0;
  for (let i = 0; i < 400; i++) {
    now += 37;
    await l.limit(id);
    longest = Math.max(longest, (await io.strlen(keyOf(prefix, escapeId(id), 'log'))) as number);
  }
  assert.ok(longest <= 20 * 16, `longest log ${longest} bytes`);
});

test('several fixed-size policies keep their states in one key, its TTL the longest of theirs', async () => {
  const store = new RedisStore({ client: io, prefix });
  const id = `combined:${Math.random()}`;
  const l = new Limiter({
    policies: [
      { name: 's', algorithm: 'token-bucket', limit: 10, window: '1s' },
      { name: 'h', algorithm: 'gcra', limit: 100, window: '1h' },
    ],
    store,
  });
  await l.limit(id, { cost: 3 });
  const key = keyOf(prefix, escapeId(id), 's+h');
  assert.deepEqual(await io.keys(`${prefix}:{${escapeId(id)}}:*`), [key]);
  assert.equal(await io.strlen(key), 8 * (2 + 1), "the token bucket's two doubles, then GCRA's one");
  // GCRA's 3 of 100 per hour are idle in 108 s, the bucket's 3 of 10 per second in 300 ms: the key lives as long as the longer.
  const ttl = await io.pttl(key);
  assert.ok(ttl > 100_000 && ttl <= 108_000, `PTTL ${ttl}`);
  const d = await l.limit(id, { cost: 7 });
  assert.equal(d.allowed, true);
  assert.equal((await l.limit(id)).allowed, false, 'the token bucket is empty; nothing is charged');
  await l.reset(id);
  assert.equal(await io.exists(key), 0);
  // A sliding log among them keeps a key per policy.
  const mixed = new Limiter({
    policies: [
      { name: 'log', algorithm: 'sliding-log', limit: 5, window: '1m' },
      { name: 'h', algorithm: 'gcra', limit: 100, window: '1h' },
    ],
    store,
  });
  await mixed.limit(id);
  assert.deepEqual((await io.keys(`${prefix}:{${escapeId(id)}}:*`)).sort(), [
    keyOf(prefix, escapeId(id), 'h'),
    keyOf(prefix, escapeId(id), 'log'),
  ]);
});

test("the sliding log appends to the log it read: the live entries' bytes as they were, the new one last", async () => {
  let now = 5_000_000;
  const store = new RedisStore({ client: io, prefix, clock: 'client' });
  const id = `append:${Math.random()}`;
  const l = new Limiter({
    policy: { name: 'log', algorithm: 'sliding-log', limit: 10, window: 1000 },
    store,
    clock: () => now,
  });
  const key = keyOf(prefix, escapeId(id), 'log');
  const entries = async () => {
    const raw = (await io.getBuffer(key))!;
    return Array.from({ length: raw.length / 16 }, (_, i) => [raw.readDoubleLE(16 * i), raw.readDoubleLE(16 * i + 8)]);
  };
  await l.limit(id);
  now += 400;
  await l.limit(id, { cost: 2 });
  await l.limit(id); // the same millisecond: merged into the newest entry
  assert.deepEqual(await entries(), [
    [5_000_000, 1],
    [5_000_400, 3],
  ]);
  now += 700; // the first entry has left the window: dropped as the next is appended
  await l.limit(id);
  assert.deepEqual(await entries(), [
    [5_000_400, 3],
    [5_001_100, 1],
  ]);
  assert.equal((await l.limit(id, { cost: 6 })).remaining, 0);
});

test('EVALSHA first; NOSCRIPT, and only NOSCRIPT, reloads with one EVAL and retries', async () => {
  const calls: string[] = [];
  let cached = false;
  const fake = {
    status: 'ready',
    evalsha: async (...args: unknown[]) => {
      calls.push('evalsha');
      if (!cached) throw new Error('NOSCRIPT No matching script. Please use EVAL.');
      return (io.evalsha as (...a: unknown[]) => Promise<unknown>)(...args);
    },
    eval: async (...args: unknown[]) => {
      calls.push('eval');
      cached = true;
      return (io.eval as (...a: unknown[]) => Promise<unknown>)(...args);
    },
  };
  const l = new Limiter({
    policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' },
    store: new RedisStore({ client: fake, prefix }),
  });
  const id = `noscript:${Math.random()}`;
  assert.equal((await l.limit(id)).remaining, 4);
  assert.equal((await l.limit(id)).remaining, 3);
  assert.deepEqual(calls, ['evalsha', 'eval', 'evalsha']);
  // Any other error is not retried: it goes to the failure policy.
  const failing = {
    status: 'ready',
    evalsha: async () => {
      calls.push('evalsha');
      throw new Error('BUSY Redis is busy running a script');
    },
    eval: async () => calls.push('eval'),
  };
  calls.length = 0;
  const store = new RedisStore({ client: failing, prefix, onError: 'closed' });
  const d = await new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' }, store }).limit(id);
  assert.equal(d.reason, 'store-error');
  assert.deepEqual(calls, ['evalsha']);
  assert.equal(store.stats.errors, 1);
});

test('concurrent calls are coalesced: one script call for many decisions, in order per key', async () => {
  const store = new RedisStore({ client: io, prefix });
  const l = new Limiter({ policy: { name: 'fw', algorithm: 'fixed-window', limit: 50, window: '1h' }, store });
  const id = `batch:${Math.random()}`;
  const ds = await Promise.all(Array.from({ length: 60 }, () => l.limit(id)));
  assert.deepEqual(
    ds.map((d) => d.remaining),
    [...Array.from({ length: 50 }, (_, i) => 49 - i), ...Array(10).fill(0)],
  );
  assert.equal(store.stats.calls, 1);
});

/** A client with only what the adapter looks for: ioredis's shape, each command logged, then sent to `io`. */
function loggingClient(calls: string[], fail: { fcall?: string; load?: string; evalsha?: string }) {
  const send = io.call.bind(io) as (...a: unknown[]) => Promise<unknown>;
  return {
    status: 'ready',
    call: async (command: string, ...args: unknown[]) => {
      // The client's health asks the server of itself once per connection (CONFIG GET, INFO): not the store's calls.
      if (command === 'CONFIG' || command === 'INFO') return send(command, ...args);
      const what = command === 'FCALL' ? 'fcall' : 'load';
      calls.push(what);
      const error = fail[what];
      if (error !== undefined) {
        if (what === 'fcall') delete fail.fcall; // once, as a server that has just lost the library
        throw new Error(error);
      }
      return send(command, ...args);
    },
    evalsha: async (...args: unknown[]) => {
      calls.push('evalsha');
      if (fail.evalsha !== undefined) throw new Error(fail.evalsha);
      return (io.evalsha as (...a: unknown[]) => Promise<unknown>)(...args);
    },
    eval: async (...args: unknown[]) => {
      calls.push('eval');
      return (io.eval as (...a: unknown[]) => Promise<unknown>)(...args);
    },
  };
}

test('FCALL first; "Function not found", and only it, loads the library with one FUNCTION LOAD and retries', async () => {
  const calls: string[] = [];
  const store = new RedisStore({ client: loggingClient(calls, { fcall: 'ERR Function not found' }), prefix });
  const l = new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' }, store });
  const id = `nofunction:${Math.random()}`;
  assert.equal((await l.limit(id)).remaining, 4);
  assert.equal((await l.limit(id)).remaining, 3);
  assert.deepEqual(calls, ['fcall', 'load', 'fcall', 'fcall']);
  assert.equal(store.stats.reloads, 1);
  // Any other error is not retried: it goes to the failure policy.
  calls.length = 0;
  const busy = new RedisStore({
    client: loggingClient(calls, { fcall: 'BUSY Redis is busy running a script' }),
    prefix,
    onError: 'closed',
  });
  const d = await new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' }, store: busy }).limit(
    id,
  );
  assert.equal(d.reason, 'store-error');
  assert.deepEqual(calls, ['fcall']);
});

test('a reload after "Function not found" has connectTimeoutMs, not what is left of timeoutMs: the first call after a restart gets Redis\'s answer', async () => {
  // A client of its own whose FUNCTION LOAD is held until the test lets it go, and whose calls on the
  // probe key never answer: the probe, sent after the first call, times out, so the first call's own
  // deadline has passed while its library was loading.
  const client = new Redis(redisUrl());
  await once(client, 'ready');
  const send = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let loading!: (library: string) => void;
  const loadSeen = new Promise<string>((r) => (loading = r));
  (client as unknown as { call: (...args: unknown[]) => Promise<unknown> }).call = async (...args: unknown[]) => {
    if (args[0] === 'FUNCTION' && args[1] === 'LOAD') {
      loading(String(args[2]));
      await released;
    }
    if (args[0] === 'FCALL' && args.some((a) => String(a).includes('reload-probe'))) return new Promise(() => {});
    return send(...args);
  };
  // A limit of its own, so that its library is new to this Redis and the first call finds it missing.
  const limit = 900_000 + Math.floor(Math.random() * 99_999);
  const store = new RedisStore({ client, prefix, timeoutMs: 30, onError: 'open' });
  const l = new Limiter({ policy: { name: 'r', algorithm: 'gcra', limit, window: '1h' }, store });
  try {
    const first = l.limit(`reload:${Math.random()}`);
    const library = await loadSeen;
    const probe = await l.limit('reload-probe');
    assert.equal(probe.reason, 'store-error', "the probe timed out: the first call's timeoutMs has passed too");
    release();
    const d = await first;
    assert.equal(d.reason, undefined, "Redis's answer, not the failure policy's");
    assert.deepEqual([d.allowed, d.remaining], [true, limit - 1]);
    assert.equal(store.stats.timeouts, 1, 'the probe alone timed out');
    await client.call('FUNCTION', 'DELETE', /^#!lua name=(\S+)/.exec(library)![1]!);
  } finally {
    client.disconnect();
  }
});

test('a server without functions, or an ACL that refuses them, turns the store to EVALSHA for good', async () => {
  const refusals: Array<[{ fcall?: string; load?: string }, string[]]> = [
    [{ fcall: "ERR unknown command 'FCALL', with args beginning with: " }, ['fcall', 'evalsha']],
    [{ fcall: "NOPERM User app has no permissions to run the 'fcall' command" }, ['fcall', 'evalsha']],
    [
      {
        fcall: 'ERR Function not found',
        load: "NOPERM User app has no permissions to run the 'function|load' command",
      },
      ['fcall', 'load', 'evalsha'],
    ],
  ];
  for (const [fail, first] of refusals) {
    const calls: string[] = [];
    const store = new RedisStore({ client: loggingClient(calls, fail), prefix });
    const l = new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' }, store });
    const id = `evalsha:${Math.random()}`;
    assert.equal((await l.limit(id)).remaining, 4, JSON.stringify(fail));
    assert.equal((await l.limit(id)).remaining, 3, JSON.stringify(fail));
    assert.deepEqual(calls, [...first, 'evalsha'], JSON.stringify(fail));
    assert.equal(store.stats.errors, 0);
  }
});

test('a client that throws while reloading (FUNCTION LOAD, EVAL) gets the failure policy, and no rejection goes unhandled', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    const clients = [
      {
        status: 'ready',
        call: (command: string) => {
          if (command === 'FCALL') return Promise.reject(new Error('ERR Function not found'));
          throw new Error('connection is closed'); // FUNCTION LOAD throws instead of rejecting
        },
        evalsha: async () => [],
        eval: async () => [],
      },
      {
        status: 'ready',
        evalsha: () => Promise.reject(new Error('NOSCRIPT No matching script. Please use EVAL.')),
        eval: () => {
          throw new Error('connection is closed');
        },
      },
    ];
    for (const client of clients) {
      const store = new RedisStore({ client, prefix, onError: 'closed' });
      const d = await new Limiter({ policy: { name: 'g', algorithm: 'gcra', limit: 5, window: '1s' }, store }).limit(
        'x',
      );
      assert.equal(d.reason, 'store-error');
      assert.equal(store.stats.errors, 1);
    }
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
