// RecentAttempts: record() finds the tags check() computed, and that changes nothing but the work done.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SECRET, makeGuard } from '../test/support/guard-kit.js';
import { assertNoPlainValue, privacyTrace } from '../test/support/privacy.js';
import { tagAttempt, tagAttemptRecalling, type AttemptTagger, type TaggedAttempt } from './attempt.js';
import type { Guard } from './guard.js';
import { KeyedHasher } from './keyed-hash.js';
import { RECENT_ATTEMPT_SLOTS, RecentAttempts } from './recent-attempts.js';
import { Reputation } from './reputation.js';

const tagger: AttemptTagger = {
  hasher: new KeyedHasher(Buffer.from(SECRET)),
  reputation: new Reputation(['198.51.100.0/25'], ['203.0.113.0/24'], ['2001:db8::/32']),
  ipv4Subnet: 24,
  ipv6Subnet: 64,
  ipv6AddressPrefix: 64,
};

/** A table that hashes each attempt as the real one does but never finds one: every call tags afresh. */
class NeverRecalls extends RecentAttempts {
  override find(
    account: string,
    ip: string,
    fingerprint: string | undefined,
    take: boolean,
  ): TaggedAttempt | undefined {
    super.find(account, ip, fingerprint, take);
    return undefined;
  }
}

/** The guard's table, which is private: the tests below look inside it or swap it. */
const tableOf = (guard: Guard) => guard as unknown as { recent: RecentAttempts };
const insides = (recent: RecentAttempts) =>
  recent as unknown as { entries: (TaggedAttempt | undefined)[]; scratch: Uint8Array };

test('record finds the very tags check computed, and they equal the tags computed afresh', () => {
  const recent = new RecentAttempts();
  // ASCII (a byte a character in the hashed message), and wider characters (two or three), after narrow ones too.
  for (const [account, ip, fingerprint] of [
    ['alice@example.com', '198.51.100.7', undefined],
    ['alice@example.com', '203.0.113.9', 'device-1'],
    ['zoë', '10.1.2.3', undefined],
    ['zoë', '::ffff:10.1.2.3', 'appareil-é'],
    ['ab中文', '2001:db8:1:2::9', 'device-1'],
    ['ab中文', '[2001:db8::1]', '端末'],
    ['x'.repeat(1024), '10.1.2.3', '中'.repeat(1024)],
  ] as const) {
    const attempt = { account, ip, fingerprint };
    const checked = tagAttemptRecalling('check', attempt, tagger, recent);
    const recorded = tagAttemptRecalling('record', { ...attempt, success: false }, tagger, recent);
    assert.equal(recorded, checked, `${account} ${ip} ${fingerprint}: the same object, not a second computation`);
    assert.deepEqual(recorded, tagAttempt('record', attempt, tagger));
  }
  assert.ok(
    insides(recent).scratch.every((w) => w === 0),
    'scratch wiped, the longest wide text included',
  );
});

test('record takes the tags it found out of the table and keeps none; recording the same attempt again tags it afresh', () => {
  const recent = new RecentAttempts();
  const attempt = { account: 'alice@example.com', ip: '198.51.100.7' };
  const checked = tagAttemptRecalling('check', attempt, tagger, recent);
  assert.equal(recent.size, 1);
  assert.equal(tagAttemptRecalling('record', { ...attempt, success: true }, tagger, recent), checked);
  assert.equal(recent.size, 0, 'taken by the record');
  const again = tagAttemptRecalling('record', { ...attempt, success: false }, tagger, recent);
  assert.notEqual(again, checked, 'computed again, not found');
  assert.deepEqual(again, checked);
  assert.equal(recent.size, 0, 'a record keeps nothing');
  // A check leaves its tags for the record that follows, and a second check finds them too.
  const rechecked = tagAttemptRecalling('check', attempt, tagger, recent);
  assert.equal(tagAttemptRecalling('check', attempt, tagger, recent), rechecked);
});

test('attempts that differ in any field, or only in where one field ends, never share tags', () => {
  const recent = new RecentAttempts();
  const attempts = [
    { account: 'ab', ip: '10.0.0.1' },
    { account: 'a', ip: '10.0.0.1' },
    { account: 'a1', ip: '0.0.0.1' }, // the same text as the one above, split elsewhere
    { account: 'a', ip: '10.0.0.12', fingerprint: 'x' },
    { account: 'a', ip: '10.0.0.1', fingerprint: '2x' },
    { account: 'ab', ip: '10.0.0.1', fingerprint: 'x' },
    { account: 'ab', ip: '10.0.0.1', fingerprint: 'xy' },
    { account: 'abx', ip: '10.0.0.1', fingerprint: 'y' },
    { account: 'ab', ip: '10.0.0.10' },
    { account: 'ab', ip: '::ffff:10.0.0.1' }, // the same host: the same tags, found either way
    { account: 'é', ip: '10.0.0.1' },
    { account: '\ud800', ip: '10.0.0.1' }, // lone surrogates: one UTF-8 (U+FFFD), two attempts here
    { account: '\ud801', ip: '10.0.0.1' },
  ];
  for (let round = 0; round < 2; round++) {
    for (const a of attempts)
      assert.deepEqual(
        tagAttemptRecalling('check', a, tagger, recent),
        tagAttempt('check', a, tagger),
        JSON.stringify(a),
      );
  }
});

test("property: a guard that finds check()'s tags decides and keeps exactly what one that recomputes them does", async () => {
  const account = fc.constantFrom('alice', 'bob', 'carol@example.com', 'dave');
  const ip = fc.constantFrom(
    '198.51.100.7',
    '198.51.100.200',
    '203.0.113.9',
    '10.1.2.3',
    '::ffff:10.1.2.3',
    '2001:db8:1:2::9',
    '2001:db8:1:2::a',
    '192.0.2.1',
  );
  const step = fc.record({
    account,
    ip,
    fingerprint: fc.option(fc.constantFrom('dev-1', 'dev-2'), { nil: undefined }),
    // check then record (the usual pair), a record alone, a check alone
    kind: fc.constantFrom('pair', 'pair', 'record', 'check'),
    success: fc.boolean(),
    password: fc.option(fc.constantFrom('pw1', 'pw2', 'pw3', 'pw4'), { nil: undefined }),
    dt: fc.integer({ min: 0, max: 120_000 }),
  });
  const options = { allowList: ['198.51.100.0/25'], denyList: ['192.0.2.0/24'], hostingRanges: ['203.0.113.0/24'] };
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
      const recalling = makeGuard(options);
      const recomputing = makeGuard(options);
      tableOf(recomputing.guard).recent = new NeverRecalls();
      for (const s of steps) {
        const attempt = { account: s.account, ip: s.ip, fingerprint: s.fingerprint };
        const outcome = { ...attempt, success: s.success, password: s.success ? undefined : s.password };
        for (const g of [recalling, recomputing]) g.advance(s.dt);
        if (s.kind !== 'record')
          assert.deepEqual(await recalling.guard.check(attempt), await recomputing.guard.check(attempt));
        if (s.kind !== 'check')
          assert.deepEqual(await recalling.guard.record(outcome), await recomputing.guard.record(outcome));
      }
      assert.equal(recalling.state.dump(), recomputing.state.dump());
      assert.deepEqual([...recalling.store.keys].sort(), [...recomputing.store.keys].sort());
    }),
    { numRuns: 150 },
  );
});

test('the table stays bounded: at most RECENT_ATTEMPT_SLOTS attempts, however many are tagged', () => {
  const recent = new RecentAttempts();
  for (let i = 0; i < 8 * RECENT_ATTEMPT_SLOTS; i++)
    tagAttemptRecalling(
      'check',
      { account: `user${i}`, ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}` },
      tagger,
      recent,
    );
  assert.ok(recent.size <= RECENT_ATTEMPT_SLOTS, `${recent.size} kept`);
  assert.ok(recent.size > RECENT_ATTEMPT_SLOTS / 2, `${recent.size} kept: the table is in use`);
  assert.equal(insides(recent).entries.length, RECENT_ATTEMPT_SLOTS);
});

test('an address that does not parse is never kept: every call throws, the first and the next', () => {
  const recent = new RecentAttempts();
  for (let i = 0; i < 2; i++) {
    assert.throws(() => tagAttemptRecalling('check', { account: 'alice', ip: '10.0.0.256' }, tagger, recent), {
      code: 'ERR_SLUICE_INVALID_IP',
    });
    assert.throws(
      () => tagAttemptRecalling('record', { account: 'alice', ip: '10.0.0.256', success: false }, tagger, recent),
      { code: 'ERR_SLUICE_INVALID_IP' },
    );
  }
  assert.equal(recent.size, 0);
});

test('the table holds no plain account, address, fingerprint or password, and its scratch is zeroed after each use', async () => {
  const { guard } = makeGuard();
  await privacyTrace(guard);
  const recent = tableOf(guard).recent;
  assert.ok(recent.size > 0);
  const { entries, scratch } = insides(recent);
  assertNoPlainValue(JSON.stringify(entries));
  assert.ok(
    scratch.every((w) => w === 0),
    'scratch wiped',
  );
});
