// The guard on a Redis Cluster this test starts itself (3 masters + 3 replicas on spare ports, torn down
// afterwards): the guard conformance suite through ioredis's Cluster and node-redis's cluster, failing
// closed so a CROSSSLOT or any other error fails the test, and each source's two keys in one slot.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard, type RedisGuardState } from '../../src/index.js';
import { RedisStore } from '../../../sluice/src/stores/redis/index.js';
import { guardConformance } from '../contracts/guard-conformance.js';
import { runPrefix, useCluster } from '../../../testing/src/harness.js';

const ctx = useCluster();
const base = runPrefix('guard-cluster');
let n = 0;
const stores: RedisStore[] = [];

/** The guard state a Guard takes from a store. */
const stateOf = (s: RedisStore) =>
  new Guard({ secret: 'cluster-secret-0123456789ab', store: s }).state as RedisGuardState;

function store(client: () => unknown): RedisStore {
  const s = new RedisStore({
    client: client(),
    prefix: `${base}:${n++}`,
    clock: 'client',
    timeoutMs: 2000,
    onError: 'closed',
  });
  stores.push(s);
  return s;
}

guardConformance('guard on redis cluster (ioredis)', { makeStore: () => store(() => ctx.io) });
guardConformance('guard on redis cluster (node-redis)', { makeStore: () => store(() => ctx.nr) });

test('guard on redis cluster: keys over many slots, each call on one; an account and its pairs in one slot', async () => {
  const s = store(() => ctx.io);
  const guard = new Guard({ secret: 'cluster-secret-0123456789ab', store: s });
  for (let i = 0; i < 40; i++) await guard.record({ account: `user${i}`, ip: `198.51.${i}.7`, success: false });
  const state = guard.state as RedisGuardState;
  const slots = new Set<number>();
  for (let i = 0; i < 40; i++) {
    const source = state.sourceKey(`probe-${i}`);
    const slot = (await ctx.io.cluster('KEYSLOT', source)) as number;
    assert.equal(state.slot('gs', `probe-${i}`), slot, "the slot the state batches by is the cluster's");
    const account = (await ctx.io.cluster('KEYSLOT', state.accountKey(`acct-${i}`))) as number;
    assert.equal(await ctx.io.cluster('KEYSLOT', state.pairKey(`acct-${i}`, `addr-${i}`)), account);
    assert.equal(state.slot('ga', `acct-${i}`), account);
    slots.add(slot);
  }
  assert.ok(slots.size > 10, `${slots.size} slots`);
  assert.equal(state.stats.fallbacks, 0);
  // Per counted failure: the account's call (its path judged, the lock and the pair bucket in it), then the
  // address's and the subnet's (different slots), sent together once the account said the failure counted;
  // and once, when the guard starts, the fleet's monitor baselines.
  assert.equal(state.stats.calls, 40 * 3 + 1);
});

test("guard on redis cluster: a first login's success, through either client, is one call (SET NX), and its record is read back", async () => {
  for (const client of [() => ctx.io, () => ctx.nr]) {
    let now = 1_700_000_000_000;
    const s = store(client);
    const guard = new Guard({ secret: 'cluster-secret-0123456789ab', store: s, clock: () => now });
    const state = guard.state as RedisGuardState;
    const login = { account: 'newbie', ip: '198.51.100.8' };
    await guard.check(login);
    const calls = state.stats.calls;
    assert.deepEqual(await guard.record({ ...login, success: true }), {
      counted: false,
      consecutiveFailures: 0,
      action: 'allow',
      reasons: [],
    });
    assert.equal(state.stats.calls, calls + 1);
    // The record is there: four strangers' failures later, the owner from the familiar address is still let in.
    for (let i = 1; i <= 4; i++) {
      now += 1000;
      await guard.record({ account: 'newbie', ip: `203.0.113.${i}`, success: false });
    }
    const owner = await guard.check(login);
    const stranger = await guard.check({ account: 'newbie', ip: '192.0.2.50' });
    assert.deepEqual([owner.action, stranger.reasons.includes('account-backoff')], ['allow', true]);
  }
});

test('no guard state call on the cluster fell back', () => {
  for (const s of stores) {
    assert.equal(s.stats.fallbacks, 0);
    assert.equal(stateOf(s).stats.fallbacks, 0);
  }
});
