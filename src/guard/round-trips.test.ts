// How many round trips a login waits for when the guard's state and buckets answer asynchronously (Redis):
// every call is held until the test answers all held calls at once, one "round trip", so the rounds a
// check takes are counted exactly, with no Redis and no timing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lone, SECRET, T0 } from '../../test/support/guard-kit.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store, StoreTable, TableSpec } from '../stores/store.js';
import { Guard } from './guard.js';
import type { GuardVerdict } from './ladder.js';
import { MemoryGuardState } from './memory-state.js';
import type { GuardState } from './state.js';

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

/** A state on the wire; `judging` adds the optional calls that judge an attempt's path themselves, as Redis's do. */
function remoteState(wire: Wire, inner: MemoryGuardState, judging = true): GuardState {
  const state: GuardState = {
    readAccount: (...a) => wire.send('readAccount', () => inner.readAccount(...a)),
    failAccount: (...a) => wire.send('failAccount', () => inner.failAccount(...a)),
    lockAccount: (...a) => wire.send('lockAccount', () => inner.lockAccount(...a)),
    succeedAccount: (...a) => wire.send('succeedAccount', () => inner.succeedAccount(...a)),
    noteSource: (...a) => wire.send('noteSource', () => inner.noteSource(...a)),
    readSource: (...a) => wire.send('readSource', () => inner.readSource(...a)),
  };
  if (!judging) return state;
  return {
    ...state,
    failAccountJudged: (...a) => wire.send('failAccountJudged', () => inner.failAccountJudged(...a)),
    succeedAccountJudged: (...a) => wire.send('succeedAccountJudged', () => inner.succeedAccountJudged(...a)),
  };
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

test('check sends the account read and every source read together: one round trip, familiar or not', async () => {
  let now = T0;
  const wire = new Wire();
  const remote = new Guard({ secret: SECRET, state: remoteState(wire, new MemoryGuardState()), store: remoteStore(wire, new MemoryStore()), clock: () => now, random: () => 0 });
  // The same guard in memory decides every attempt too: reading ahead must not change a verdict.
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
    const byRound = Array.from({ length: rounds }, (_, i) => wire.sent.filter((s) => s.startsWith(`${first + i}:`)).map((s) => s.slice(s.indexOf(':') + 1)).sort());
    return { verdict: value, rounds: byRound };
  };
  const reads = (n: { sources: number; buckets: number }) => ['readAccount', ...Array<string>(n.sources).fill('readSource'), ...Array<string>(n.buckets).fill('decide')].sort();

  // A stranger: the account, the address's, subnet's and pair's buckets and two source records, all at once.
  const stranger = await check('alice', lone(1));
  assert.deepEqual(stranger.rounds, [reads({ sources: 2, buckets: 3 })]);

  // The owner logs in from home, then mistypes there a few times: home is a familiar source.
  await both((g) => g.record({ account: 'alice', ip: lone(2), success: true }));
  for (let i = 0; i < 3; i++) {
    await both((g) => g.record({ account: 'alice', ip: lone(2), success: false, password: `typo${i}` }));
    now += 1_000;
  }
  // Strangers fail from the owner's address against other accounts, filling its per-address counts.
  for (let i = 0; i < 40; i++) await both((g) => g.record({ account: `victim${i}`, ip: lone(2), success: false, password: 'x' }));
  // The owner's check read the address's records too (sent before the account said home was familiar),
  // and was judged without them; a stranger from the same address is judged by them, and refused, which
  // counts as a failure of its sources: a second round, of writes only.
  const owner = await check('alice', lone(2));
  assert.deepEqual(owner.rounds, [reads({ sources: 2, buckets: 3 })]);
  const outsider = await check('bob', lone(2));
  assert.equal(outsider.rounds.length, 2);
  assert.deepEqual(outsider.rounds[0], reads({ sources: 2, buckets: 3 }));
  assert.ok(outsider.rounds[1]!.every((s) => s === 'noteSource'), outsider.rounds[1]!.join(', '));
  assert.equal(owner.verdict.action, 'allow');
  assert.notEqual(outsider.verdict.action, 'allow', 'the address is judged for a stranger, not for the owner');
});

test('a state that fails while the source reads are out rejects check once, with the state\'s error', async () => {
  const wire = new Wire();
  const inner = new MemoryGuardState();
  const state: GuardState = {
    ...remoteState(wire, inner),
    readAccount: () => wire.send('readAccount', () => {
      throw new Error('Redis is down');
    }),
  };
  const guard = new Guard({ secret: SECRET, state, store: remoteStore(wire, new MemoryStore()), clock: () => T0, random: () => 0 });
  await assert.rejects(wire.drive(guard.check({ account: 'alice', ip: lone(1) })), /Redis is down/);
});

test('record waits for one round trip on a success and two on a counted failure, with the same results', async () => {
  // Records without a check in this process: a judging state tells a success's path with its write, and
  // the success's source notes wait for it (a familiar path's success vouches for its sources).
  for (const judging of [true, false]) {
    let now = T0;
    const wire = new Wire();
    const remote = new Guard({ secret: SECRET, state: remoteState(wire, new MemoryGuardState(), judging), store: remoteStore(wire, new MemoryStore()), clock: () => now, random: () => 0 });
    const local = new Guard({ secret: SECRET, clock: () => now, random: () => 0 });
    const record = async (outcome: { account: string; ip: string; success: boolean; password?: string }) => {
      const { value, rounds } = await wire.drive(remote.record(outcome));
      assert.deepEqual(value, await local.record(outcome), JSON.stringify(outcome));
      return rounds;
    };
    // A state that judges the path itself answers in the call that writes; one that cannot is read first.
    const extra = judging ? 0 : 1;
    assert.equal(await record({ account: 'alice', ip: lone(1), success: true }), 1 + (judging ? 1 : extra), 'a success');
    for (let i = 0; i < 3; i++) {
      assert.equal(await record({ account: 'alice', ip: lone(2), success: false, password: `guess${i}` }), 2 + extra, 'a stranger\'s counted failure');
      assert.equal(await record({ account: 'alice', ip: lone(1), success: false, password: `typo${i}` }), 2 + extra, 'the owner\'s counted failure');
      now += 1_000;
    }
    assert.equal(await record({ account: 'alice', ip: lone(2), success: false, password: 'guess2' }), 1 + extra, 'a repeated password (one of the last three): counted nowhere');
    // The owner's success at home reports the strangers' failures since, and forgives only the owner's own.
    assert.equal(await record({ account: 'alice', ip: lone(1), success: true }), 1 + (judging ? 1 : extra), 'the owner\'s success');
    const after = await wire.drive(remote.check({ account: 'alice', ip: lone(2) }));
    assert.deepEqual(after.value, await local.check({ account: 'alice', ip: lone(2) }));
    // After a check in this process the path is known: a success is one round trip, as a read-first one.
    await wire.drive(remote.check({ account: 'alice', ip: lone(1) }));
    await local.check({ account: 'alice', ip: lone(1) });
    assert.equal(await record({ account: 'alice', ip: lone(1), success: true }), 1 + extra, 'a checked success');
  }
});
