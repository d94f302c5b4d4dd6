// How many round trips a login waits for when the memory guard state keeps its buckets in a store that
// answers asynchronously (a remote one): every call is held until the test answers all held calls at once,
// one "round trip", so the rounds a check takes are counted exactly, with no network and no timing. The
// Redis state's own round trips are test/redis/guard-round-trips.test.ts's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, SECRET, T0 } from '../test/support/guard-kit.js';
import { MemoryStore } from '../../sluice/src/stores/memory.js';
import type { Store, StoreTable, TableSpec } from '../../sluice/src/stores/store.js';
import { Guard } from './guard.js';
import type { GuardVerdict } from './ladder.js';

/** Holds every call until answer(); records which round each was sent in. */
class Wire {
  round = 0;
  readonly sent: string[] = [];
  private held: (() => void)[] = [];

  send<T>(what: string, call: () => T): Promise<T> {
    this.sent.push(`${this.round}:${what}`);
    return new Promise((resolve, reject) => {
      this.held.push(() => {
        try {
          resolve(call());
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  /** Runs `op` to its end, answering whatever it holds once it can send nothing more; returns the rounds. */
  async drive<T>(op: Promise<T>): Promise<{ value: T; rounds: number }> {
    let done = false;
    let value!: T;
    let failure: { error: unknown } | undefined;
    op.then(
      (v) => {
        done = true;
        value = v;
      },
      (error: unknown) => {
        done = true;
        failure = { error };
      },
    );
    const start = this.round;
    for (;;) {
      await new Promise((r) => setImmediate(r)); // every microtask the held calls can cause has run
      if (done) break;
      const batch = this.held;
      assert.ok(batch.length > 0, 'the operation waits for nothing the wire holds');
      this.held = [];
      this.round++;
      for (const answer of batch) answer();
    }
    if (failure !== undefined) throw failure.error;
    return { value, rounds: this.round - start };
  }
}

function remoteStore(wire: Wire, inner: MemoryStore): Store {
  return {
    bind(spec: TableSpec): StoreTable {
      const t = inner.bind(spec);
      return {
        sync: false,
        decide: (key, cost, lease) => wire.send('decide', () => t.decide(key, cost, lease)),
        adjust: (key, delta) => wire.send('adjust', () => t.adjust(key, delta)),
        release: (key, lease) => wire.send('release', () => t.release(key, lease)),
        reset: (key) => wire.send('reset', () => t.reset(key)),
      };
    },
  };
}

test('check reads the buckets it needs together: one round trip, three buckets for a stranger, the pair alone for the owner', async () => {
  let now = T0;
  const wire = new Wire();
  const remote = new Guard({
    secret: SECRET,
    store: remoteStore(wire, new MemoryStore()),
    clock: () => now,
    random: () => 0,
  });
  // The same guard with every bucket in memory decides every attempt too: the wire must not change a verdict.
  const local = new Guard({ secret: SECRET, clock: () => now, random: () => 0 });
  const both = async (op: (g: Guard) => Promise<unknown>) => {
    await wire.drive(op(remote));
    await op(local);
  };
  /** A check on both guards; `rounds` lists what the remote one sent in each round trip. */
  const check = async (account: string, ip: string): Promise<{ verdict: GuardVerdict; rounds: string[][] }> => {
    const first = wire.round;
    wire.sent.length = 0;
    const { value, rounds } = await wire.drive(remote.check({ account, ip }));
    assert.deepEqual(value, await local.check({ account, ip }), `${account} from ${ip}`);
    const byRound = Array.from({ length: rounds }, (_, i) =>
      wire.sent
        .filter((s) => s.startsWith(`${first + i}:`))
        .map((s) => s.slice(s.indexOf(':') + 1))
        .sort(),
    );
    return { verdict: value, rounds: byRound };
  };
  const peeks = (n: number) => Array<string>(n).fill('decide');

  // A stranger: the address's, subnet's and pair's buckets, all at once.
  const stranger = await check('alice', lone(1));
  assert.deepEqual(stranger.rounds, [peeks(3)]);

  // The owner logs in from home, then mistypes there a few times: home is a familiar source.
  await both((g) => g.record({ account: 'alice', ip: lone(2), success: true }));
  for (let i = 0; i < 3; i++) {
    await both((g) => g.record({ account: 'alice', ip: lone(2), success: false, password: `typo${i}` }));
    now += 1_000;
  }
  // Strangers fail from the owner's address against other accounts, filling its per-address counts.
  for (let i = 0; i < 40; i++)
    await both((g) => g.record({ account: `victim${i}`, ip: lone(2), success: false, password: 'x' }));
  // The owner's check peeks only the pair (the per-source throttles skip a familiar source); a stranger
  // from the same address is judged by them, and refused, which counts as a failure of its sources: in
  // the records, with no round trip of its own.
  const owner = await check('alice', lone(2));
  assert.deepEqual(owner.rounds, [peeks(1)]);
  const outsider = await check('bob', lone(2));
  assert.deepEqual(outsider.rounds, [peeks(3)]);
  assert.equal(owner.verdict.action, 'allow');
  assert.notEqual(outsider.verdict.action, 'allow', 'the address is judged for a stranger, not for the owner');
});

test("a store that fails while the bucket reads are out rejects check once, with the store's error", async () => {
  const wire = new Wire();
  const inner = new MemoryStore();
  const failing: Store = {
    bind(spec: TableSpec): StoreTable {
      const t = remoteStore(wire, inner).bind(spec);
      return {
        ...t,
        decide: () =>
          wire.send('decide', () => {
            throw new Error('the store is down');
          }),
      };
    },
  };
  const guard = new Guard({ secret: SECRET, store: failing, clock: () => T0, random: () => 0 });
  await assert.rejects(wire.drive(guard.check({ account: 'alice', ip: lone(1) })), /the store is down/);
});

test('record waits for one round trip on a success and on a counted failure, none on a repeated password, with the same results', async () => {
  let now = T0;
  const wire = new Wire();
  const remote = new Guard({
    secret: SECRET,
    store: remoteStore(wire, new MemoryStore()),
    clock: () => now,
    random: () => 0,
  });
  const local = new Guard({ secret: SECRET, clock: () => now, random: () => 0 });
  const record = async (outcome: { account: string; ip: string; success: boolean; password?: string }) => {
    const { value, rounds } = await wire.drive(remote.record(outcome));
    assert.deepEqual(value, await local.record(outcome), JSON.stringify(outcome));
    return rounds;
  };
  assert.equal(
    await record({ account: 'alice', ip: lone(1), success: true }),
    1,
    'a success (the pair bucket forgotten)',
  );
  for (let i = 0; i < 3; i++) {
    assert.equal(
      await record({ account: 'alice', ip: lone(2), success: false, password: `guess${i}` }),
      1,
      "a stranger's counted failure",
    );
    assert.equal(
      await record({ account: 'alice', ip: lone(1), success: false, password: `typo${i}` }),
      1,
      "the owner's counted failure",
    );
    now += 1_000;
  }
  assert.equal(
    await record({ account: 'alice', ip: lone(2), success: false, password: 'guess2' }),
    0,
    'a repeated password (one of the last three): counted nowhere',
  );
  // The owner's success at home reports the strangers' failures since, and forgives only the owner's own.
  assert.equal(await record({ account: 'alice', ip: lone(1), success: true }), 1, "the owner's success");
  const after = await wire.drive(remote.check({ account: 'alice', ip: lone(2) }));
  assert.deepEqual(after.value, await local.check({ account: 'alice', ip: lone(2) }));
});
