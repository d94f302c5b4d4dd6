// verifySolution end to end: valid solutions pass; every tampering, replay, expiry, wrong scope and
// malformed input is rejected with its reason; keys rotate; bad options are SluiceErrors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeBase64url, encodeBase64url } from '../../sluice/src/crypto/base64url.js';
import { createChallenge, MemorySpentStore, solveChallenge, verifySolution, type Keyring } from './index.js';
import { decodeChallenge, encodeChallenge, type ChallengeFields } from './encoding.js';
import { resolveSecret } from './keyring.js';
import { formatSolution, macOf, parseSolution } from './token.js';

const secret = 'correct horse battery staple 1234';
const NOW = 1_800_000_000_000;
const easy = { secret, difficulty: 64, scope: 'login:alice', ttlMs: 60_000, now: NOW };
const verify = (solution: unknown, scope = 'login:alice', store = new MemorySpentStore(), now = NOW + 1) =>
  verifySolution(solution, { secret, scope, store, now });

test('a solved challenge verifies, once', async () => {
  const store = new MemorySpentStore();
  const solution = await solveChallenge(createChallenge(easy));
  const first = await verify(solution, 'login:alice', store);
  assert.equal(first.ok, true);
  assert.deepEqual(await verify(solution, 'login:alice', store), { ok: false, reason: 'replayed' });
});

test('property: valid solutions pass for any scope, puzzle count and difficulty', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.string({ maxLength: 50 }),
      fc.integer({ min: 1, max: 64 }),
      fc.integer({ min: 1, max: 2000 }),
      async (scope, puzzles, difficulty) => {
        const ch = createChallenge({ secret, scope, puzzles, difficulty, now: NOW });
        const r = await verify(await solveChallenge(ch), scope);
        return r.ok && r.scope === scope;
      },
    ),
    { numRuns: 40 },
  );
});

/** Re-encodes the challenge inside `solution` with `change` applied, keeping its MAC (an attacker's edit)
 *  or re-signing it with `resign` (to reach the checks after the MAC). */
function tamper(solution: string, change: (f: ChallengeFields) => void, resign?: Uint8Array | string): string {
  const parsed = parseSolution(solution)!;
  const fields = { ...parsed.fields };
  change(fields);
  const payload = encodeChallenge(fields);
  const mac = resign === undefined ? parsed.mac : macOf(resolveSecret(resign, 'test').keys.get(fields.kid)!, payload);
  const nonces = Array.from({ length: fields.puzzles }, (_, i) => parsed.nonces[i] ?? 0);
  return formatSolution(`${encodeBase64url(payload)}.${encodeBase64url(mac)}`, nonces);
}

test('each tampered signed field is a bad signature', async () => {
  const solution = await solveChallenge(createChallenge({ ...easy, difficulty: 1 })); // any nonce passes
  const edits: Array<[string, (f: ChallengeFields) => void]> = [
    [
      'kid',
      (f) => {
        f.kid = 'other';
      },
    ],
    [
      'salt',
      (f) => {
        f.salt = f.salt.map((b) => b ^ 1);
      },
    ],
    [
      'target (difficulty)',
      (f) => {
        f.target -= 1;
      },
    ],
    [
      'puzzles',
      (f) => {
        f.puzzles += 1;
      },
    ],
    [
      'expiresAt',
      (f) => {
        f.expiresAt += 3_600_000;
      },
    ],
    [
      'scope',
      (f) => {
        f.scope = 'login:mallory';
      },
    ],
  ];
  for (const [name, edit] of edits) {
    assert.deepEqual(
      await verify(tamper(solution, edit), name === 'scope' ? 'login:mallory' : 'login:alice'),
      { ok: false, reason: 'bad-signature' },
      name,
    );
  }
  const parts = solution.split('.');
  const mac = decodeBase64url(parts[1]!)!;
  mac[5] ^= 0x80;
  assert.deepEqual(await verify(`${parts[0]}.${encodeBase64url(mac)}.${parts[2]}`), {
    ok: false,
    reason: 'bad-signature',
  });
  assert.deepEqual(
    await verifySolution(solution, {
      secret: 'another secret of enough bytes',
      scope: 'login:alice',
      store: new MemorySpentStore(),
      now: NOW,
    }),
    { ok: false, reason: 'bad-signature' },
  );
});

test('a wrong nonce is invalid; an unknown algorithm or a future version is malformed', async () => {
  const ch = createChallenge({ ...easy, difficulty: 200_000, puzzles: 4 });
  const solution = await solveChallenge(ch);
  const parsed = parseSolution(solution)!;
  const wrong = [...parsed.nonces];
  wrong[2] = (wrong[2]! + 1) >>> 0;
  assert.deepEqual(await verify(formatSolution(ch.token, wrong)), { ok: false, reason: 'invalid' });
  assert.deepEqual(
    await verify(
      tamper(
        solution,
        (f) => {
          f.algorithm = 'SHA-1';
        },
        secret,
      ),
    ),
    { ok: false, reason: 'malformed' },
  );
  const payload = decodeBase64url(solution.split('.')[0]!)!;
  payload[0] = 2;
  assert.deepEqual(await verify(`${encodeBase64url(payload)}.${solution.split('.').slice(1).join('.')}`), {
    ok: false,
    reason: 'malformed',
  });
});

test('a challenge is bound to its scope and its expiry', async () => {
  const solution = await solveChallenge(createChallenge(easy));
  assert.deepEqual(await verify(solution, 'login:bob'), { ok: false, reason: 'wrong-scope' });
  assert.deepEqual(await verify(solution, 'login:alice', new MemorySpentStore(), NOW + 60_000), {
    ok: false,
    reason: 'expired',
  });
  assert.equal((await verify(solution, 'login:alice', new MemorySpentStore(), NOW + 59_999)).ok, true);
});

test('a challenge signed with an old kid still verifies while the kid is in the ring', async () => {
  const old: Keyring = { current: 'k1', keys: { k1: 'first key, sixteen bytes or more' } };
  const rotated: Keyring = { current: 'k2', keys: { k1: old.keys.k1!, k2: 'second key, also long enough!!' } };
  const retired: Keyring = { current: 'k2', keys: { k2: rotated.keys.k2! } };
  const ch = createChallenge({ ...easy, secret: old });
  assert.equal(ch.kid, 'k1');
  const solution = await solveChallenge(ch);
  const opts = (s: Keyring) => ({ secret: s, scope: 'login:alice', store: new MemorySpentStore(), now: NOW });
  assert.equal((await verifySolution(solution, opts(rotated))).ok, true);
  assert.deepEqual(await verifySolution(solution, opts(retired)), { ok: false, reason: 'bad-signature' });
  assert.equal(createChallenge({ ...easy, secret: rotated }).kid, 'k2');
  // A plain secret signs as kid 'default', so it can move into a keyring under that name.
  const plain = await solveChallenge(createChallenge(easy));
  assert.equal(
    (await verifySolution(plain, opts({ current: 'k2', keys: { default: secret, k2: rotated.keys.k2! } }))).ok,
    true,
  );
});

test('malformed input of any kind resolves to a reason and never throws', async () => {
  const solution = await solveChallenge(createChallenge(easy));
  const cases: unknown[] = [
    undefined,
    null,
    0,
    1n,
    true,
    {},
    [],
    [solution],
    { toString: () => solution },
    '',
    '.',
    '..',
    '...',
    solution.slice(0, -1),
    solution.slice(0, 40),
    `${solution}.x`,
    `${solution}A`,
    solution.replace('.', ''),
    solution + 'A'.repeat(5000),
    'A'.repeat(1_000_000),
    '\u0000',
    '🙂.🙂.🙂',
    solution.toLowerCase(),
  ];
  for (const c of cases) {
    const r = await verify(c);
    assert.equal(r.ok, false, String(c).slice(0, 40));
    assert.ok(['malformed', 'bad-signature', 'invalid'].includes(r.reason!), `${String(c).slice(0, 40)} → ${r.reason}`);
  }
  assert.deepEqual(await verify(solution.slice(0, -1)), { ok: false, reason: 'malformed' });
  await fc.assert(
    fc.asyncProperty(fc.anything(), async (x) => (await verify(x)).ok === false),
    { numRuns: 300 },
  );
  // Random edits of a valid solution: each is rejected with a reason, never accepted, never thrown. One
  // puzzle of 2^20 expected hashes, so an edited nonce passes by luck with probability 2^-20 only.
  const hard = await solveChallenge(createChallenge({ ...easy, puzzles: 1, difficulty: 2 ** 20 }));
  await fc.assert(
    fc.asyncProperty(fc.nat({ max: hard.length - 1 }), fc.constantFrom(...'AQg_-.xZ9'), async (at, ch) => {
      const edited = hard.slice(0, at) + ch + hard.slice(at + 1);
      const r = await verify(edited);
      return edited === hard ? r.ok : !r.ok && typeof r.reason === 'string';
    }),
    { numRuns: 300 },
  );
});

test('bad options are SluiceErrors naming the field and the value', async () => {
  const expectError = (fn: () => unknown, pattern: RegExp) =>
    assert.throws(
      fn,
      (e: any) => e.name === 'SluiceError' && e.code === 'ERR_SLUICE_INVALID_OPTION' && pattern.test(e.message),
    );
  expectError(() => createChallenge({ ...easy, difficulty: 0 }), /'difficulty' must be .* got 0/);
  expectError(() => createChallenge({ ...easy, difficulty: Number.NaN }), /'difficulty'.*got NaN/);
  expectError(() => createChallenge({ ...easy, puzzles: 65 }), /'puzzles' must be an integer from 1 to 64, got 65/);
  expectError(() => createChallenge({ ...easy, ttlMs: -5 }), /'ttlMs'.*got -5/);
  expectError(() => createChallenge({ ...easy, scope: 42 as never }), /'scope'.*got 42/);
  expectError(() => createChallenge({ ...easy, scope: '\ud800' }), /'scope' must be a well-formed string/);
  expectError(() => createChallenge({ ...easy, secret: 'short' }), /'secret' must be at least 16 bytes, got 5 bytes/);
  expectError(
    () => createChallenge({ ...easy, secret: { current: 'nope', keys: { a: secret } } }),
    /'secret.current' must name a kid in 'secret.keys' \("a"\), got "nope"/,
  );
  expectError(
    () => createChallenge({ ...easy, secret: { current: 'a b', keys: { 'a b': secret } } }),
    /kid must be .* got "a b"/,
  );
  expectError(() => createChallenge({ ...easy, difficultee: 5 } as never), /unknown option 'difficultee'/);
  await assert.rejects(
    verifySolution('x', { secret, scope: 'a', store: {} as never }),
    /'store' must be a spent store/,
  );
  await assert.rejects(
    verifySolution('x', { secret, scope: undefined as never, store: new MemorySpentStore() }),
    /'scope' must be a string, got undefined/,
  );
});

test('no default secret when NODE_ENV=production; a per-process one otherwise', async () => {
  const saved = process.env.NODE_ENV;
  try {
    process.env.NODE_ENV = 'production';
    assert.throws(
      () => createChallenge({ ...easy, secret: undefined }),
      /'secret' is required when NODE_ENV=production/,
    );
    await assert.rejects(verifySolution('x', { scope: 'a', store: new MemorySpentStore() }), /'secret' is required/);
    process.env.NODE_ENV = 'development';
    const solution = await solveChallenge(createChallenge({ ...easy, secret: undefined }));
    assert.equal(
      (await verifySolution(solution, { scope: 'login:alice', store: new MemorySpentStore(), now: NOW })).ok,
      true,
    );
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
});

test('a missing POW_SECRET is never silent: the per-process random secret is announced once with WRN_SLUICE_POW_EPHEMERAL_SECRET', async () => {
  // A child process: the warning is once per process, and this file may have made the random secret already.
  const { spawnSync } = await import('node:child_process');
  const script = `
    import { createChallenge, verifySolution, MemorySpentStore } from ${JSON.stringify(new URL('./index.ts', import.meta.url).href)};
    const codes = [];
    process.on('warning', (w) => codes.push(w.code));
    createChallenge({ secret: undefined, difficulty: 10, scope: 's', ttlMs: 1000 });
    createChallenge({ secret: undefined, difficulty: 10, scope: 's', ttlMs: 1000 });
    await verifySolution('x', { scope: 's', store: new MemorySpentStore() });
    await new Promise((r) => setImmediate(r));
    console.log(JSON.stringify(codes));
  `;
  const env = { ...process.env, NODE_ENV: 'development' };
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '["WRN_SLUICE_POW_EPHEMERAL_SECRET"]');
  assert.match(r.stderr, /createChallenge has no secret, so @sluice\/pow made a random one/);
});

test('difficulty is a fine-grained target: nearby difficulties get distinct targets', () => {
  const a = createChallenge({ ...easy, difficulty: 100_000 });
  const b = createChallenge({ ...easy, difficulty: 101_000 });
  assert.ok(a.target > b.target);
  assert.ok(Math.abs(a.difficulty - 100_000) < 1 && Math.abs(b.difficulty - 101_000) < 1);
  assert.equal(decodeChallenge(decodeBase64url(a.token.split('.')[0]!)!)!.target, a.target);
});
