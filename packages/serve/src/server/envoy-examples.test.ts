// envoyproxy/ratelimit's own example configs (its README's Examples 1-7, test/fixtures/config/envoy/) load and
// decide as the README documents, and the keys its loader accepts today (value_to_metric, share_threshold,
// quota_mode, metadata, unit: week) load and change what they change. Time is a manual clock.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import { loadConfig, parseConfig } from './config/config.js';
import { UNITS } from './codecs/rls-types.js';
import { createMetrics } from './operator/metrics.js';
import { match, RuleSet } from './config/rules.js';
import { RateLimitService } from './service.js';
import { BadRequest } from './codecs/rls-types.js';
import type { ServiceOptions } from './service.js';
import type { RlsResponse } from './codecs/rls-types.js';

const DIR = join(import.meta.dirname, '../../test/fixtures/config/envoy');

function serve(file: string, options: Partial<ServiceOptions> = {}) {
  const store = new MemoryStore();
  const c = { now: 1_800_000_000_000 }; // a whole second, minute and hour
  const clock = () => c.now;
  const svc = new RateLimitService(new RuleSet(loadConfig(join(DIR, file)), { store, clock }), {
    store,
    localCache: false,
    clock,
    ...options,
  });
  const call = (domain: string, ...descriptors: string[][]) =>
    svc.shouldRateLimit({
      domain,
      hitsAddend: 1,
      descriptors: descriptors.map((kv) => {
        const entries = [];
        for (let i = 0; i < kv.length; i += 2) entries.push({ key: kv[i]!, value: kv[i + 1]! });
        return { entries };
      }),
    }) as RlsResponse;
  /** How many of `n` identical calls are answered OK. */
  const passes = (n: number, domain: string, ...descriptors: string[][]) => {
    let ok = 0;
    for (let i = 0; i < n; i++) if (call(domain, ...descriptors).overallCode === 'OK') ok++;
    return ok;
  };
  return { svc, c, call, passes };
}

test('every example config of the envoyproxy/ratelimit README loads', () => {
  const files = [
    'example1.yaml',
    'example2.yaml',
    'example3.yaml',
    'example4.yaml',
    'example5.yaml',
    'example6.yaml',
    'example7.yaml',
    'current-keys.yaml',
  ];
  const loaded = files.map((f) => [...loadConfig(join(DIR, f)).domains.keys()]);
  assert.deepEqual(loaded, [
    ['mongo_cps'],
    ['messaging'],
    ['edge_proxy_per_ip'],
    ['example4'],
    ['internal'],
    ['example6'],
    ['example7'],
    ['current'],
  ]);
});

test('Example 1: database users and default get 500 per second each', () => {
  const { c, passes } = serve('example1.yaml');
  assert.equal(passes(501, 'mongo_cps', ['database', 'users']), 500);
  assert.equal(passes(501, 'mongo_cps', ['database', 'default']), 500);
  assert.equal(passes(3, 'mongo_cps', ['database', 'other']), 3, 'a value no rule names is not limited');
  c.now += 1000;
  assert.equal(passes(1, 'mongo_cps', ['database', 'users']), 1);
});

test('Example 2: 5 marketing messages a day per number, and 100 messages a day per number, checked together', () => {
  const { passes, call } = serve('example2.yaml');
  const marketing = ['message_type', 'marketing', 'to_number', '2061111111'];
  assert.equal(passes(6, 'messaging', marketing, ['to_number', '2061111111']), 5);
  assert.equal(
    passes(1, 'messaging', ['message_type', 'marketing', 'to_number', '2062222222']),
    1,
    'each number has its own 5',
  );
  // Each descriptor is decided on its own, as in Envoy: the per-number limit counted all 6 calls.
  assert.equal(passes(95, 'messaging', ['to_number', '2061111111']), 94);
  const r = call('messaging', marketing, ['to_number', '2061111111']);
  assert.deepEqual(
    r.statuses.map((s) => s.code),
    ['OVER_LIMIT', 'OVER_LIMIT'],
  );
});

test('Example 3: 10 per second per IP; the blocked IP gets nothing, key+value before key', () => {
  const { passes } = serve('example3.yaml');
  assert.equal(passes(11, 'edge_proxy_per_ip', ['remote_address', '50.0.0.1']), 10);
  assert.equal(passes(3, 'edge_proxy_per_ip', ['remote_address', '50.0.0.5']), 0);
});

test('Example 4: a two-entry descriptor matches the nested rule at its depth, never the shallower one', () => {
  const { call, passes } = serve('example4.yaml');
  assert.equal(passes(301, 'example4', ['key', 'value', 'subkey', 'subvalue']), 300);
  const shallow = call('example4', ['key', 'value']);
  assert.deepEqual(
    [shallow.overallCode, shallow.statuses[0]!.currentLimit],
    ['OK', undefined],
    'one entry: no rule at that depth',
  );
});

test('Example 5: an unlimited descriptor answers OK with LimitRemaining at MaxUint32; azure gets 100 a minute', () => {
  const { call, passes } = serve('example5.yaml');
  const ldap = call('internal', ['ldap', 'x']);
  assert.deepEqual([ldap.overallCode, ldap.statuses[0]!.limitRemaining], ['OK', 4_294_967_295]);
  assert.equal(passes(101, 'internal', ['azure', 'x']), 100);
});

test('Example 6: user-a is in shadow mode (never limited), user-b is limited at 20 per second', () => {
  const { call, passes } = serve('example6.yaml');
  assert.equal(passes(15, 'example6', ['service', 'auth-service', 'user', 'user-a']), 15);
  const a = call('example6', ['service', 'auth-service', 'user', 'user-a']);
  assert.deepEqual([a.overallCode, a.statuses[0]!.shadow], ['OK', true], 'over its 10/s, answered OK');
  assert.equal(passes(21, 'example6', ['service', 'auth-service', 'user', 'user-b']), 20);
});

test('Example 7: the replacing rule applies and the replaced one is left untouched', () => {
  const { passes } = serve('example7.yaml');
  const one = ['key_1', 'value_1', 'user', 'bkthomps'];
  const two = ['key_2', 'value_2', 'user', 'bkthomps'];
  // Both descriptors together: only the 10/s rule counts.
  assert.equal(passes(11, 'example7', one, two), 10);
  // ...and the 5/s rule was not charged by those calls.
  assert.equal(passes(6, 'example7', one), 5);
});

test('unit: week is 7 days, aligned to the epoch as Envoy aligns its windows, and reported as WEEK', () => {
  const { c, call, passes } = serve('current-keys.yaml');
  assert.equal(UNITS.WEEK, 7 * 86_400_000);
  c.now = Math.floor(c.now / UNITS.WEEK) * UNITS.WEEK; // a week boundary
  assert.equal(passes(5, 'current', ['weekly', 'w']), 4);
  const over = call('current', ['weekly', 'w']);
  assert.deepEqual(over.statuses[0]!.currentLimit, {
    name: '',
    requestsPerUnit: 4,
    unit: 'WEEK',
    header: over.statuses[0]!.currentLimit!.header,
  });
  assert.equal(over.statuses[0]!.durationUntilResetMs, UNITS.WEEK);
  c.now += 6 * 86_400_000;
  assert.equal(passes(1, 'current', ['weekly', 'w']), 0, 'six days on, the same week');
  c.now += 86_400_000;
  assert.equal(passes(1, 'current', ['weekly', 'w']), 1, 'the next week');
});

test('share_threshold: every value a wildcard matches shares one limit; without it each value has its own', () => {
  const { passes } = serve('current-keys.yaml');
  assert.equal(passes(2, 'current', ['path', 'files/a.pdf']), 2);
  assert.equal(passes(2, 'current', ['path', 'files/b.csv']), 1, 'the third request to files/* in the hour');
  assert.equal(passes(1, 'current', ['path', 'files/c.txt']), 0);
  assert.equal(passes(3, 'current', ['path', 'models/a']), 2);
  assert.equal(passes(3, 'current', ['path', 'models/b']), 2, 'models/* values are counted apart');
});

test('quota_mode: over one soft quota the request passes; over every quota of the request it is denied', () => {
  const { call } = serve('current-keys.yaml');
  const primary = ['backend', 'primary'];
  const fallback = ['backend', 'fallback'];
  assert.equal(call('current', primary).overallCode, 'OK');
  // Over the primary quota, within the fallback's: the request passes, both statuses OK.
  const one = call('current', primary, fallback);
  assert.deepEqual(
    [one.overallCode, one.statuses.map((s) => [s.code, s.quota])],
    [
      'OK',
      [
        ['OK', 'over'],
        ['OK', 'within'],
      ],
    ],
  );
  // Over both: denied, and both statuses say so.
  const both = call('current', primary, fallback);
  assert.deepEqual([both.overallCode, both.statuses.map((s) => s.code)], ['OVER_LIMIT', ['OVER_LIMIT', 'OVER_LIMIT']]);
  // An enforced descriptor within its limit beside them changes nothing: every quota is over.
  assert.equal(call('current', primary, ['path', 'models/z']).overallCode, 'OVER_LIMIT');
});

test('value_to_metric names the metrics by the values of the levels that set it; the state stays per value', async () => {
  const { svc, passes } = serve('current-keys.yaml');
  assert.equal(passes(3, 'current', ['route', '/a', 'user_id', 'ann']), 2);
  assert.equal(passes(3, 'current', ['route', '/a', 'user_id', 'bob']), 2, 'each user still has a limit of their own');
  assert.equal(passes(1, 'current', ['route', '/b', 'user_id', 'ann']), 1);
  const metrics = createMetrics(() => svc.allStats(), { reloads: () => ({ ok: 0, failed: 0 }) });
  const text = await metrics.metrics();
  assert.match(
    text,
    /sluice_rule_hits_total\{domain="current",rule="current.route.user_id",descriptor="current.route_\/a.user_id"\} 6/,
  );
  assert.match(
    text,
    /sluice_rule_hits_total\{domain="current",rule="current.route.user_id",descriptor="current.route_\/b.user_id"\} 1/,
  );
  assert.doesNotMatch(text, /user_id_ann/, 'user values stay out of the metrics');
});

test('descriptor metadata is accepted and kept on the rule; a non-map is an error naming the place', () => {
  const config = loadConfig(join(DIR, 'current-keys.yaml'));
  const rule = config.domains.get('current')!.rules.find((r) => r.id === 'current.backend_primary')!;
  assert.deepEqual(rule.metadata, { service: 'primary.internal' });
  assert.throws(
    () =>
      parseConfig([
        {
          file: 'm.yaml',
          text: 'domain: m\ndescriptors:\n  - key: a\n    metadata: [1]\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
        },
      ]),
    /m\.yaml:4:15: descriptors\[0\]\.metadata: must be a map, got a list/,
  );
  assert.throws(
    () =>
      parseConfig([
        {
          file: 's.yaml',
          text: 'domain: s\ndescriptors:\n  - key: a\n    value: exact\n    share_threshold: true\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
        },
      ]),
    /s\.yaml:5:22: descriptors\[0\]\.share_threshold: shares one limit among the values a wildcard matches, so 'value' must hold a '\*' \(got 'exact'\)/,
  );
});

test('an unknown domain is answered OK, every descriptor unlimited, as Envoy does; strictDomains refuses it', () => {
  const lenient = serve('example1.yaml');
  const r = lenient.call('nope', ['database', 'users'], ['a', 'b']);
  assert.deepEqual(
    [r.overallCode, r.statuses.map((s) => [s.code, s.currentLimit])],
    [
      'OK',
      [
        ['OK', undefined],
        ['OK', undefined],
      ],
    ],
  );
  assert.equal(lenient.svc.unknownDomainRequests, 1);
  assert.throws(
    () => lenient.svc.shouldRateLimit({ domain: 'nope', descriptors: [], hitsAddend: 1 }),
    BadRequest,
    'still a request with no descriptors',
  );
  const strict = serve('example1.yaml', { strictDomains: true });
  assert.throws(() => strict.call('nope', ['a', 'b']), {
    name: 'BadRequest',
    message: "unknown domain 'nope'; configured domains: mongo_cps",
  });
});

/** The id of the rule a descriptor of `pairs` matches in `file`'s domain test-domain, or undefined. */
function ruleOf(file: string, ...pairs: string[]): string | undefined {
  const domain = loadConfig(join(DIR, file)).domains.get('test-domain')!;
  const entries = [];
  for (let i = 0; i < pairs.length; i += 2) entries.push({ key: pairs[i]!, value: pairs[i + 1]! });
  return match(domain.root, entries)?.rule?.id;
}

test('wildcards inside a value load silently and never match (finding 2): TestWildcardConfig, `*` anywhere, several per value', () => {
  const rule = (...pairs: string[]) => ruleOf('wildcard.yaml', ...pairs);
  // A key with no value matches every value; a trailing wildcard every value with its prefix, under the pattern's id.
  assert.deepEqual([rule('noVal', 'foo1'), rule('noVal', 'foo2')], ['test-domain.noVal', 'test-domain.noVal']);
  assert.deepEqual([rule('wild', 'foo1'), rule('wild', 'foo2')], ['test-domain.wild_foo*', 'test-domain.wild_foo*']);
  assert.equal(rule('nestedWild', 'val1', 'wild', 'goo2'), 'test-domain.nestedWild_val1.wild_goo*');
  assert.deepEqual(
    [rule('wild', 'bar'), rule('noWild', 'foo1')],
    [undefined, undefined],
    'no match; a plain value is not a prefix',
  );
  // A middle wildcard: the prefix and the suffix, anything (or nothing) between.
  assert.deepEqual(
    [rule('midWild', 'barab'), rule('midWild', 'bar123b'), rule('midWild', 'barb')],
    ['test-domain.midWild_bar*b', 'test-domain.midWild_bar*b', 'test-domain.midWild_bar*b'],
  );
  assert.deepEqual([rule('midWild', 'bara'), rule('midWild', 'xbarb')], [undefined, undefined]);
  // Several wildcards: each part in order.
  assert.deepEqual(
    [rule('multiWild', 'foo123bar456baz'), rule('multiWild', 'foobarbaz')],
    ['test-domain.multiWild_foo*bar*baz', 'test-domain.multiWild_foo*bar*baz'],
  );
  assert.deepEqual(
    [rule('multiWild', 'foo123baz'), rule('multiWild', 'bar456baz'), rule('multiWild', 'foobazbar')],
    [undefined, undefined, undefined],
  );
});

test('wildcard matching: parts never overlap, and the first wildcard in file order wins', () => {
  const config = parseConfig([
    {
      file: 'w.yaml',
      text: 'domain: w\ndescriptors:\n  - key: k\n    value: ab*ba\n    rate_limit: { unit: second, requests_per_unit: 1 }\n  - key: k\n    value: a*\n    rate_limit: { unit: second, requests_per_unit: 2 }\n  - key: k\n    value: "*x*"\n    rate_limit: { unit: second, requests_per_unit: 3 }\n',
    },
  ]);
  const root = config.domains.get('w')!.root;
  const rule = (value: string) => match(root, [{ key: 'k', value }])?.rule?.id;
  assert.deepEqual(
    [rule('abba'), rule('aba'), rule('abXba'), rule('zxz'), rule('x'), rule('zz')],
    ['w.k_ab*ba', 'w.k_a*', 'w.k_ab*ba', 'w.k_*x*', 'w.k_*x*', undefined],
  );
});

test('share_threshold on any wildcard (share_threshold.yaml): every value a middle, multi or nested wildcard matches shares one limit', () => {
  const { passes, call } = serve('share-threshold.yaml');
  const remaining = (...pairs: string[]) => call('test-domain', pairs).statuses[0]!.limitRemaining;
  assert.equal(passes(60, 'test-domain', ['midpath', '/api/v1']), 60);
  assert.equal(remaining('midpath', '/apiXv1'), 39, '/api/v1 and /apiXv1 share /api*v1');
  assert.equal(call('test-domain', ['midpath', '/api/v2']).statuses[0]!.currentLimit, undefined, 'no match');
  assert.equal(passes(30, 'test-domain', ['multiroute', 'svc1ep2rpc']), 30);
  assert.equal(remaining('multiroute', 'svcXepYrpc'), 19);
  assert.equal(call('test-domain', ['multiroute', 'svcABCrpc']).statuses[0]!.currentLimit, undefined, 'no ep');
  assert.equal(passes(40, 'test-domain', ['tenant', 't1prod', 'resource', 'resAv2']), 40);
  assert.equal(remaining('tenant', 't99prod', 'resource', 'resBBBv2'), 19, 'nested middle wildcards share one limit');
  assert.equal(passes(100, 'test-domain', ['user', 'user/alice', 'resource', 'res/file1', 'action', 'read']), 100);
  assert.equal(remaining('user', 'user/bob', 'resource', 'res/file2', 'action', 'read'), 49);
  // An explicit value is matched before the wildcard, with a limit of its own.
  assert.equal(remaining('file', 'test1'), 49);
  assert.equal(passes(10, 'test-domain', ['file', 'test2']), 10);
  assert.equal(remaining('file', 'test3'), 89);
});
