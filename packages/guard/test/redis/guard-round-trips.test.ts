// How many round trips and calls a login costs with the guard on a RedisStore (standalone Redis): every
// script call and every read (MGET) the client sends is logged with the round it went out in (calls sent in
// one turn of the event loop are one round), and each verdict is checked against a memory guard's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard, type GuardVerdict, type RedisGuardState } from '../../src/index.js';
import { MAX_OPERATIONS, MAX_READ_KEYS } from '../../src/redis/state.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { connectBothClients, runPrefix } from '../../../testing/src/harness.js';

const base = runPrefix('guard-rounds');
let n = 0;
const { io } = await connectBothClients(async (client) => {
  for (const k of await client.keys(`${base}:*`)) await client.unlink(k);
});

/** An ioredis stand-in that forwards to `io` and logs each call's round and command (script calls' sizes apart). */
function counted() {
  const rounds: number[] = [];
  const commands: string[] = [];
  const sizes: number[] = [];
  let round = 0;
  let open = false;
  const log = (command: string) => {
    commands.push(command);
    if (!open) {
      open = true;
      round++;
      setImmediate(() => (open = false));
    }
    rounds.push(round);
  };
  const client = {
    get status() {
      return io.status;
    },
    on: (event: string, listener: (...a: unknown[]) => void) => io.on(event, listener),
    evalsha: (...a: unknown[]) => (
      log('script'), sizes.push(a.length), (io.evalsha as (...x: unknown[]) => Promise<unknown>)(...a)
    ),
    eval: (...a: unknown[]) => (log('script'), (io.eval as (...x: unknown[]) => Promise<unknown>)(...a)),
    mgetBuffer: (...a: unknown[]) => (log('mget'), (io.mgetBuffer as (...x: unknown[]) => Promise<unknown>)(...a)),
    set: (...a: unknown[]) => (
      log(a.includes('NX') ? 'set-nx' : 'set'), (io.set as (...x: unknown[]) => Promise<unknown>)(...a)
    ),
  };
  /** Rounds and calls since the last take(). */
  const take = () => {
    const r = { rounds: new Set(rounds).size, calls: rounds.length };
    rounds.length = 0;
    return r;
  };
  /** The commands sent since the last call of `sent` (and, counted by their kind). */
  const sent = () => {
    const kinds: Record<string, number> = {};
    for (const c of commands) kinds[c] = (kinds[c] ?? 0) + 1;
    commands.length = 0;
    return kinds;
  };
  return { client, take, sent, sizes };
}

test("a login on a RedisStore: a check is one call, a record one more, with the memory guard's verdicts", async () => {
  let now = 1_700_000_123_456;
  const wire = counted();
  const store = new RedisStore({
    client: wire.client,
    prefix: `${base}:${n++}`,
    clock: 'client',
    timeoutMs: 2000,
    onError: 'closed',
  });
  const options = { secret: 'rounds-secret-0123456789ab', clock: () => now, random: () => 0 };
  const redis = new Guard({ ...options, store });
  const memory = new Guard(options);
  await redis.check({ account: 'warm', ip: '192.0.2.1' }); // loads the script (NOSCRIPT, then EVAL)
  wire.take();
  const check = async (
    account: string,
    ip: string,
  ): Promise<{ verdict: GuardVerdict; rounds: number; calls: number }> => {
    const verdict = await redis.check({ account, ip });
    assert.deepEqual(verdict, await memory.check({ account, ip }), `${account} from ${ip}`);
    return { verdict, ...wire.take() };
  };
  const record = async (outcome: { account: string; ip: string; success: boolean; password?: string }) => {
    assert.deepEqual(await redis.record(outcome), await memory.record(outcome), JSON.stringify(outcome));
    return wire.take();
  };
  const one = { rounds: 1, calls: 1 };
  wire.sent();
  const stranger = await check('alice', '203.0.113.1');
  assert.deepEqual(
    { rounds: stranger.rounds, calls: stranger.calls },
    one,
    "a stranger's check: account, pair, address, subnet",
  );
  assert.deepEqual(wire.sent(), { mget: 1 });
  assert.deepEqual(await record({ account: 'alice', ip: '203.0.113.1', success: true }), one, 'a first success');
  assert.deepEqual(
    wire.sent(),
    { 'set-nx': 1 },
    'a first success, where the check found nothing: the record created, no script',
  );
  assert.deepEqual(
    await record({ account: 'alice', ip: '198.51.100.7', success: false, password: 'guess1' }),
    one,
    'a counted failure, its lock and buckets',
  );
  assert.deepEqual(wire.sent(), { script: 1 });
  assert.deepEqual(
    await record({ account: 'alice', ip: '198.51.100.7', success: false, password: 'guess1' }),
    one,
    'a repeated password: counted nowhere',
  );
  const owner = await check('alice', '203.0.113.1');
  assert.deepEqual({ rounds: owner.rounds, calls: owner.calls }, one, "the owner's check");
  assert.deepEqual(await record({ account: 'alice', ip: '203.0.113.1', success: true }), one, "the owner's success");
  wire.sent();
  // Strangers fail from one address on many accounts; a stranger from it is then refused, which notes its
  // sources as failed: a second call, of writes only.
  now += 1000;
  for (let i = 0; i < 12; i++)
    await record({ account: `victim${i}`, ip: '198.51.100.9', success: false, password: 'x' });
  const refused = await check('bob', '198.51.100.9');
  assert.notEqual(refused.verdict.action, 'allow');
  assert.deepEqual({ rounds: refused.rounds, calls: refused.calls }, { rounds: 2, calls: 2 });
});

test('concurrent logins share calls: 64 checks in reads of MAX_READ_KEYS keys sent in one round, their 64 records in one more (first successes a SET NX each, failures in calls of MAX_OPERATIONS)', async () => {
  const wire = counted();
  const store = new RedisStore({ client: wire.client, prefix: `${base}:${n++}`, timeoutMs: 2000, onError: 'closed' });
  const guard = new Guard({ secret: 'rounds-secret-0123456789ab', store });
  await guard.check({ account: 'warm', ip: '192.0.2.1' });
  wire.take();
  const logins = Array.from({ length: 64 }, (_, i) => ({ account: `user${i}`, ip: `203.0.113.${i + 1}` }));
  const verdicts = await Promise.all(logins.map((l) => guard.check(l)));
  assert.ok(verdicts.every((v) => v.action === 'allow'));
  // A stranger's check reads 4 keys: account, pair, address, subnet.
  assert.deepEqual(wire.take(), { rounds: 1, calls: Math.ceil((64 * 4) / MAX_READ_KEYS) });
  wire.sent();
  await Promise.all(
    logins.map((l, i) => guard.record({ ...l, success: i % 20 !== 0, password: i % 20 === 0 ? 'wrong' : undefined })),
  );
  // A record whose check's tags were overwritten in the guard's table of recent attempts (a random ~3 %
  // at 64 in flight) is a success this process did not check: it joins the failures' script call.
  const { 'set-nx': created = 0, ...rest } = wire.sent();
  assert.deepEqual(rest, { script: 1 });
  assert.ok(created > 60 - 12 && created <= 60, `${created} of 60 successes created by SET NX`);
  assert.deepEqual(wire.take(), { rounds: 1, calls: created + 1 });
  const stats = (guard.state as RedisGuardState).stats;
  assert.equal(stats.fallbacks, 0);
});

test('a full call is written at once, not at the end of the turn: 64 records in one turn go as calls of MAX_OPERATIONS, each written before the next is built', async () => {
  // Redis runs a full call while the client builds the next. Before, the turn's calls were held (corked)
  // together until the turn ended, and the client and Redis took turns on the whole batch.
  const events: string[] = [];
  const stream = io.stream;
  const client = {
    get status() {
      return io.status;
    },
    on: (event: string, listener: (...a: unknown[]) => void) => io.on(event, listener),
    stream: {
      cork: () => (events.push('cork'), stream.cork()),
      uncork: () => (events.push('write'), stream.uncork()),
    },
    evalsha: (...a: unknown[]) => (events.push('call'), (io.evalsha as (...x: unknown[]) => Promise<unknown>)(...a)),
    eval: (...a: unknown[]) => (io.eval as (...x: unknown[]) => Promise<unknown>)(...a),
    mgetBuffer: (...a: unknown[]) => (io.mgetBuffer as (...x: unknown[]) => Promise<unknown>)(...a),
  };
  const store = new RedisStore({ client, prefix: `${base}:${n++}`, timeoutMs: 2000, onError: 'closed' });
  const guard = new Guard({ secret: 'rounds-secret-0123456789ab', store });
  await guard.record({ account: 'warm', ip: '192.0.2.1', success: true }); // loads the script
  const logins = Array.from({ length: 64 }, (_, i) => ({
    account: `user${i}`,
    ip: `203.0.113.${i + 1}`,
    success: true,
  }));
  events.length = 0;
  await Promise.all(logins.map((l) => guard.record(l)));
  assert.deepEqual(
    events.filter((e) => e !== 'cork'),
    Array.from({ length: 64 / MAX_OPERATIONS }, () => ['call', 'write']).flat(),
  );
});

test('checks and records made in separate callbacks of one turn share one call each (the state flushed on process.nextTick: one call per callback)', async () => {
  const wire = counted();
  const store = new RedisStore({ client: wire.client, prefix: `${base}:${n++}`, timeoutMs: 2000, onError: 'closed' });
  const guard = new Guard({ secret: 'rounds-secret-0123456789ab', store });
  await guard.record({ account: 'warm', ip: '192.0.2.1', success: false }); // loads the script
  await new Promise((r) => setImmediate(r));
  wire.sent();
  /** Runs `each(i)` for i < 8, each in an immediate of its own, all queued now (so due in one turn). */
  const inSeparateCallbacks = <T>(each: (i: number) => Promise<T>) =>
    Promise.all(
      Array.from(
        { length: 8 },
        (_, i) => new Promise<T>((resolve, reject) => setImmediate(() => each(i).then(resolve, reject))),
      ),
    );
  const logins = Array.from({ length: 8 }, (_, i) => ({ account: `apart${i}`, ip: `192.0.2.${10 + i}` }));
  await inSeparateCallbacks((i) => guard.check(logins[i]!));
  assert.deepEqual(wire.sent(), { mget: 1 });
  await inSeparateCallbacks((i) => guard.record({ ...logins[i]!, success: false }));
  assert.deepEqual(wire.sent(), { script: 1 });
});

test('Guards with the same options on one store share one session: a call carries its constants once', async () => {
  /** The size of the calls that 40 records make, from `guards` taking turns. */
  const callSize = async (count: number) => {
    const wire = counted();
    const store = new RedisStore({ client: wire.client, prefix: `${base}:${n++}`, timeoutMs: 2000, onError: 'closed' });
    const guards = Array.from({ length: count }, () => new Guard({ secret: 'rounds-secret-0123456789ab', store }));
    for (const g of guards) await g.record({ account: 'warm', ip: '192.0.2.1', success: true }); // and whatever a guard reads once at start
    await new Promise((r) => setImmediate(r));
    wire.sizes.length = 0;
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        guards[i % count]!.record({ account: `user${i}`, ip: '192.0.2.1', success: true }),
      ),
    );
    assert.equal(wire.sizes.length, Math.ceil(40 / MAX_OPERATIONS), JSON.stringify(wire.sizes));
    return wire.sizes.reduce((a, b) => a + b, 0);
  };
  assert.equal(await callSize(40), await callSize(1));
});

test('a success computed from a stale read is done by the script instead: two checks of one account, then both successes', async () => {
  // Each record sends the success its check computed (AC) with the record it read; the second read is stale
  // once the first success is written, so the script does that success itself, and nothing is lost.
  let now = 1_700_000_123_456;
  const wire = counted();
  const store = new RedisStore({ client: wire.client, prefix: `${base}:${n++}`, timeoutMs: 2000, onError: 'closed' });
  const options = { secret: 'rounds-secret-0123456789ab', clock: () => now, random: () => 0 };
  const redis = new Guard({ ...options, store });
  const memory = new Guard(options);
  const both = async <T>(f: (g: Guard) => Promise<T>) => {
    const [a, b] = [await f(redis), await f(memory)];
    assert.deepEqual(a, b);
    return a;
  };
  const home = { account: 'carol', ip: '203.0.113.5' };
  const phone = { account: 'carol', ip: '198.51.100.20' };
  await both((g) => g.check(home));
  await both((g) => g.check(phone));
  wire.sent();
  await both((g) => g.record({ ...home, success: true }));
  await both((g) => g.record({ ...phone, success: true }));
  // The first creates the record (SET NX); the second's create is refused, and the script does it.
  assert.deepEqual(wire.sent(), { 'set-nx': 2, script: 1 });
  // Both paths are familiar now, the second success not lost to the first: strangers failing on many
  // accounts from either address get the next stranger there refused, and carol let in.
  for (const at of [home, phone]) {
    now += 1000;
    for (let i = 0; i < 12; i++)
      await both((g) => g.record({ account: `victim${i}@${at.ip}`, ip: at.ip, success: false, password: 'x' }));
    assert.notEqual(
      (await both((g) => g.check({ account: 'dave', ip: at.ip }))).action,
      'allow',
      `a stranger from ${at.ip}`,
    );
    assert.equal((await both((g) => g.check(at))).action, 'allow', `carol from ${at.ip}`);
  }
});
