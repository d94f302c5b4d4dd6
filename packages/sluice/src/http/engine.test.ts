// The shared engine without a server: option validation, the one-time forwarding warning, async stores, errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../limiter.js';
import { AsyncStore } from '../../test/contracts/http-adapter.js';
import { HttpRateLimiter, type Outcome } from './engine.js';
import type { RateLimitOptions, RequestInfo } from './options.js';

function info(
  remote: string | undefined,
  headers: Record<string, string> = {},
  method = 'GET',
  path = '/',
): RequestInfo {
  return { method, path, remoteAddress: remote, ip: '', header: (n) => headers[n] };
}

const policy = { algorithm: 'gcra', limit: 2, window: '1m' } as const;
const make = (o: Partial<RateLimitOptions<unknown>>) =>
  new HttpRateLimiter<unknown>({ policy, ...o } as RateLimitOptions<unknown>, 'rateLimit');

test('bad options are SluiceErrors that name the option and quote the value', () => {
  const cases: [Partial<RateLimitOptions<unknown>>, RegExp][] = [
    [
      { headers: 'draft-9' as never },
      /'headers' must be one of 'legacy', 'draft-6', 'draft-7', 'draft-8', 'none', got "draft-9"/,
    ],
    [{ status: 200 }, /'status' must be an integer from 400 to 599 \(an HTTP error status\), got 200/],
    [{ ipv6Subnet: 0 }, /'ipv6Subnet' must be an integer from 1 to 128 \(a prefix length\) or false, got 0/],
    [{ trustProxy: ['10.0.0.0/40'] }, /'trustProxy\[0\]' has a prefix length outside 0-32, got "10.0.0.0\/40"/],
    [{ proxyHeader: 'x-real-ip' as never }, /'proxyHeader' must be 'x-forwarded-for' or 'forwarded', got "x-real-ip"/],
    [{ dryRun: 'yes' as never }, /'dryRun' must be true or false, got "yes"/],
    [{ warnings: 0 as never }, /'warnings' must be true or false, got 0/],
    [{ key: { cookie: 'sid' } as never }, /'key' must be 'ip', \{ header: 'x-api-key' \} or a function/],
    [{ cost: -1 }, /'cost' must be a non-negative integer or a function returning one, got -1/],
    [{ limiter: new Limiter({ policy }) }, /give exactly one of 'policy', 'policies' or 'limiter'/],
    [
      { routes: [{ path: 'login', policy }] },
      /route "route-0": 'path' must start with '\/' or be a RegExp, got "login"/,
    ],
    [
      {
        routes: [
          { name: 'a', policy },
          { name: 'a', policy },
        ],
      },
      /'routes'\[1\].name must be a unique non-empty string, got "a"/,
    ],
    [{ routes: [{ policy, burst: 3 } as never] }, /'routes'\[0\]: unknown field 'burst'/],
    [{ windowMs: 1000 } as never, /unknown rateLimit option 'windowMs'; known options are/],
    [{ deny: 'evil' as never }, /'deny' must be an array of addresses and CIDRs, or \{ addresses, keys \}, got "evil"/],
    [{ allow: { users: ['a'] } as never }, /'allow': unknown field 'users'; known fields are addresses, keys/],
    [{ allow: { keys: [''] } }, /'allow.keys' must be an array of non-empty strings, got \[""\]/],
    [{ deny: { addresses: ['10.0.0.0/99'] } }, /'deny.addresses\[0\]' has a prefix length outside 0-32/],
    [{ banStatus: 200 }, /'banStatus' must be an integer from 400 to 599 \(an HTTP error status\), got 200/],
    [{ denyStatus: 302 }, /'denyStatus' must be an integer from 400 to 599 \(an HTTP error status\), got 302/],
    [
      { limit: 'many' as never },
      /'limit' must be a number, limits by policy name, or a function returning either, got "many"/,
    ],
    [{ limit: 0 }, /'limits\.[^']*' must be a positive integer, got 0/],
    [
      { policy: undefined, policies: [policy, { ...policy, name: 'b' }], limit: 5 },
      /'limit' is a number but the rule has 2 policies; give limits by policy name, such as \{ "gcra-2-60000ms": 5 \}/,
    ],
    [{ skipFailedRequests: 1 as never }, /'skipFailedRequests' must be true or false, got 1/],
    [
      { requestWasSuccessful: () => true },
      /'requestWasSuccessful' has no effect without 'skipFailedRequests' or 'skipSuccessfulRequests'/,
    ],
    [
      { skipSuccessfulRequests: true, requestWasSuccessful: 'yes' as never },
      /'requestWasSuccessful' must be a function \(req, res\) => boolean, got "yes"/,
    ],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => make(options),
      { name: 'SluiceError', code: 'ERR_SLUICE_INVALID_OPTION', message },
      String(message),
    );
  }
  assert.throws(() => make({ policy: { algorithm: 'gcra', limit: 0, window: '1m' } }), {
    code: 'ERR_SLUICE_INVALID_POLICY',
  });
});

test('a forwarding header with no trusted proxy warns once, with a code; warnings: false keeps quiet', async () => {
  const seen: Error[] = [];
  const listen = (w: Error) => seen.push(w);
  process.on('warning', listen);
  try {
    make({ warnings: false }).check(null, info('127.0.0.1', { 'x-forwarded-for': '1.2.3.4' }));
    await new Promise((r) => setImmediate(r));
    assert.equal(seen.length, 0);
    const limiter = make({});
    limiter.check(null, info('127.0.0.1', { 'x-forwarded-for': '1.2.3.4' }));
    limiter.check(null, info('127.0.0.1', { forwarded: 'for=1.2.3.4' }));
    await new Promise((r) => setImmediate(r));
    assert.equal(seen.length, 1);
    assert.equal((seen[0] as Error & { code: string }).code, 'WRN_SLUICE_FORWARDED_HEADER_IGNORED');
    assert.match(seen[0]!.message, /'trustProxy' is empty, so the header was ignored .* \(127\.0\.0\.1\)/);
  } finally {
    process.off('warning', listen);
  }
});

test('a synchronous store decides without a Promise; an asynchronous one through one, with the same answers', async () => {
  const sync = make({});
  const async_ = make({ store: new AsyncStore() });
  const a = sync.check(null, info('203.0.113.1'));
  const b = async_.check(null, info('203.0.113.1'));
  assert.ok(!(a instanceof Promise));
  assert.ok(b instanceof Promise);
  const answers = [];
  for (const engine of [sync, async_]) {
    for (let i = 0; i < 3; i++)
      answers.push(((await engine.check(null, info('203.0.113.2'))) as Outcome<unknown>).limited);
  }
  assert.deepEqual(answers, [false, false, true, false, false, true]);
});

test('request-time errors: no remote address, a key function returning a non-string', async () => {
  assert.throws(() => make({}).check(null, info(undefined)), {
    code: 'ERR_SLUICE_NO_CLIENT_ADDRESS',
    message: /cannot be keyed by IP; give a 'key' function/,
  });
  // With a key of its own, a request without a peer address (a Unix socket) is decided as usual.
  assert.equal(((await make({ key: () => 'user:1' }).check(null, info(undefined))) as Outcome<unknown>).key, 'user:1');
  assert.throws(() => make({ key: () => 42 as never }).check(null, info('1.2.3.4')), {
    code: 'ERR_SLUICE_INVALID_KEY',
    message: /the 'key' function must return a string or undefined, got 42/,
  });
  // A key function that returns undefined falls back to the client IP.
  const o = (await make({ key: () => undefined }).check(null, info('::ffff:1.2.3.4'))) as Outcome<unknown>;
  assert.equal(o.key, '1.2.3.4');
});

test('routes: the first match decides, keys are prefixed with the route, unmatched requests use the top level', async () => {
  const engine = make({
    routes: [
      { name: 'writes', method: ['POST', 'put'], policy: { algorithm: 'gcra', limit: 1, window: '1s' } },
      { name: 'api', path: '/api/*', policy },
      { name: 'rx', path: /^\/v\d+\//, policy },
    ],
  });
  const key = async (method: string, path: string) =>
    ((await engine.check(null, info('1.2.3.4', {}, method, path))) as Outcome<unknown>).key;
  assert.equal(await key('PUT', '/api/x'), 'writes:1.2.3.4');
  assert.equal(await key('GET', '/api/x'), 'api:1.2.3.4');
  assert.equal(await key('GET', '/v2/x'), 'rx:1.2.3.4');
  assert.equal(await key('GET', '/other'), '1.2.3.4');
  // With routes and no top-level rule, unmatched requests are not limited at all.
  const only = make({ policy: undefined, routes: [{ path: '/login', policy }] });
  assert.equal(only.check(null, info('1.2.3.4', {}, 'GET', '/')), undefined);
});
