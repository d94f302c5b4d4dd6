// The suite every guard backend runs: the same login traces through a Guard on the store and guard state
// under test, checked against the verdicts the guard's semantics require. The memory store and state run
// it in guard-memory.test.ts; a Redis store and guard state call guardConformance() from their own test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard, type GuardOptions, type GuardState } from '../../src/index.js';
import type { Store } from '../../../sluice/src/index.js';

export interface GuardBackend {
  makeStore(): Store;
  /** The guard state under test; omit to let the Guard take its default for the store (the store's own, or memory). */
  makeState?(): GuardState;
  /** Everything the backend holds, as text, for the privacy check; omit if it cannot be dumped. */
  dump?(store: Store, state: GuardState): Promise<string>;
}

function setup(b: GuardBackend, options: GuardOptions = {}) {
  let now = 1_700_000_123_456;
  const store = b.makeStore();
  const state = b.makeState?.();
  const guard = new Guard({
    secret: 'conformance-secret-0123456789',
    store,
    ...(state === undefined ? {} : { state }),
    clock: () => now,
    random: () => 0,
    ...options,
  });
  return { guard, store, state: guard.state, advance: (ms: number) => void (now += ms) };
}

const fail = (account: string, ip: string, password?: string) => ({
  account,
  ip,
  success: false,
  ...(password === undefined ? {} : { password }),
});

export function guardConformance(name: string, b: GuardBackend): void {
  test(`${name}: account backoff delays, then blocks, and a familiar address keeps its own path`, async () => {
    const { guard, advance } = setup(b, { accountChallengeFailures: 100 });
    await guard.record({ account: 'alice', ip: '192.0.2.7', success: true });
    for (let i = 0; i < 4; i++) await guard.record(fail('alice', `10.0.${i}.1`));
    assert.deepEqual(await guard.check({ account: 'alice', ip: '10.9.9.9' }), {
      action: 'delay',
      delayMs: 1000,
      retryAfterMs: 0,
      challenge: undefined,
      risk: 0,
      reasons: ['account-backoff'],
    });
    for (let i = 4; i < 9; i++) await guard.record(fail('alice', `10.0.${i}.1`));
    assert.deepEqual((await guard.check({ account: 'alice', ip: '10.9.9.9' })).retryAfterMs, 32_000);
    assert.equal((await guard.check({ account: 'alice', ip: '192.0.2.7' })).action, 'allow');
    advance(32_000);
    assert.equal((await guard.check({ account: 'alice', ip: '10.9.9.9' })).action, 'allow');
  });

  test(`${name}: repeated wrong passwords count once; a stranger's success forgets the failures`, async () => {
    const { guard } = setup(b);
    const counts = [];
    for (const pw of ['a', 'a', 'b', 'a', 'c', 'd', 'a'])
      counts.push((await guard.record(fail('bob', '198.51.100.1', pw))).consecutiveFailures);
    assert.deepEqual(counts, [1, 1, 2, 2, 3, 4, 5]);
    assert.equal((await guard.record({ account: 'bob', ip: '198.51.100.9', success: true })).consecutiveFailures, 0);
  });

  test(`${name}: address bucket, pair lane and its reset on success`, async () => {
    const { guard } = setup(b, {
      ipFailuresPerDay: 5,
      freeFailures: 100,
      accountChallengeFailures: 100,
      ipDistinctAccounts: 100,
      ipDistinctAccountsLong: 100,
      subnetDistinctAccounts: 100,
      ratioMinFailures: 1000,
    });
    for (let i = 0; i < 5; i++) await guard.record(fail(`user${i}`, '198.51.100.1'));
    assert.deepEqual(await guard.check({ account: 'x', ip: '198.51.100.1' }), {
      action: 'block',
      delayMs: 0,
      retryAfterMs: 17_280_000,
      challenge: undefined,
      risk: 0,
      reasons: ['ip-failures'],
    });
    const pair = setup(b, { freeFailures: 100, accountChallengeFailures: 100, ratioMinFailures: 1000 }).guard;
    for (let i = 0; i < 10; i++) await pair.record(fail('carol', '203.0.113.5'));
    assert.deepEqual((await pair.check({ account: 'carol', ip: '203.0.113.5' })).reasons, ['pair-failures']);
    await pair.record({ account: 'carol', ip: '203.0.113.5', success: true });
    assert.equal((await pair.check({ account: 'carol', ip: '203.0.113.5' })).action, 'allow');
  });

  test(`${name}: distinct accounts per address and per /64 within the window`, async () => {
    const { guard, advance } = setup(b, { ratioMinFailures: 1000 });
    for (let i = 0; i < 10; i++) await guard.record(fail(`user${i}`, '198.51.100.1'));
    for (let i = 0; i < 20; i++) await guard.record(fail(`user${i}`, `2001:db8:1:2::${i + 1}`));
    assert.deepEqual((await guard.check({ account: 'x', ip: '198.51.100.1' })).reasons, ['ip-distinct-accounts']);
    // One /64 is one address (ipv6AddressPrefix 64) and one subnet: both of its records saw the twenty.
    assert.deepEqual((await guard.check({ account: 'x', ip: '2001:db8:1:2::ff' })).reasons, [
      'ip-distinct-accounts',
      'subnet-distinct-accounts',
    ]);
    advance(30 * 60_000);
    // Past the short window only the week's count is left: the weaker long signal (one set serves both).
    assert.deepEqual((await guard.check({ account: 'x', ip: '198.51.100.1' })).reasons, ['ip-distinct-accounts-long']);
    advance(7 * 86_400_000 - 30 * 60_000);
    assert.deepEqual((await guard.check({ account: 'x', ip: '198.51.100.1' })).reasons, []);
  });

  if (b.dump !== undefined) {
    test(`${name}: holds no plain account, address or password`, async () => {
      const { guard, store, state } = setup(b);
      await guard.record({
        account: 'alice@example.com',
        ip: '203.0.113.77',
        fingerprint: 'device-xyz-123',
        success: false,
        password: 'hunter2-secret',
      });
      await guard.record({ account: 'alice@example.com', ip: '2001:db8:abcd:12::7', success: true });
      await guard.check({ account: 'alice@example.com', ip: '203.0.113.77' });
      const text = await b.dump!(store, state);
      assert.ok(text.length > 100);
      for (const plain of ['alice', '203.0.113', '2001:db8', 'hunter2', 'device-xyz'])
        assert.ok(!text.includes(plain), plain);
    });
  }
}
