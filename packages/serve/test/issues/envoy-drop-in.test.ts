// Issue 49, items 1-3: `sluice serve` against envoyproxy/ratelimit's own assertions, over gRPC, on memory
// and Redis (Redis Cluster: test/redis/serve-cluster.test.ts). Its integration scripts token-quota.sh and
// multiservice-tokenquota.sh are replayed as Envoy's HTTP filter drives them (a cost-0 check on the request
// path, the real cost debited on the response path); the fixtures are re-stated from
// examples/ratelimit/config/example.yaml (service_1: 1, service_2: 2, both quota_mode), per hour rather than
// per minute so that no window edge falls inside a run (the decisions asserted are the same).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rlsClient, start, TempConfig, variants } from '../integration/serve-helpers.js';
import type { RunningService } from '../../src/server/serve.js';
import type { Settings } from '../../src/server/config/settings.js';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import { Limiter } from '../../../sluice/src/limiter.js';
import { Gate } from '../../../outbound/src/index.js';

const QUOTAS = `domain: rl
descriptors:
  - key: service
    value: service_1
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: service
    value: service_2
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: tokens
    rate_limit: { unit: hour, requests_per_unit: 100 }
`;

type Client = ReturnType<typeof rlsClient>;
const entry = (key: string, value: string, hits?: number) => ({
  entries: [{ key, value }],
  ...(hits === undefined ? {} : { hits_addend: { value: hits } }),
});

let services = 0;
/** Starts the service on `config` for one variant, with `extra` settings, on counters of its own; closes it after the suite. */
function serving(
  config: string,
  variant: { name: string; settings: Partial<Settings> },
  extra: Partial<Settings> = {},
) {
  const cfg = new TempConfig(config);
  const own =
    variant.settings.redisPrefix === undefined ? {} : { redisPrefix: `${variant.settings.redisPrefix}-${++services}` };
  extra = { ...own, ...extra };
  const ctx = {} as { svc: RunningService; client: Client };
  before(async () => {
    ctx.svc = (await start(cfg.path, variant, extra)).svc;
    ctx.client = rlsClient(ctx.svc.grpcPort!);
  });
  after(async () => {
    ctx.client.close();
    await ctx.svc.close();
    cfg.remove();
  });
  return ctx;
}

/**
 * One request through Envoy's filter on /tokenquota: check service_2 with hits_addend 0; if allowed, the
 * upstream serves it and the response path debits 1. Whether it was served.
 */
async function tokenQuotaRequest(client: Client, domain: string, service: string): Promise<boolean> {
  const check = await client.call({ domain, descriptors: [entry('service', service, 0)] });
  if (check.overall_code !== 'OK') return false;
  await client.call({ domain, descriptors: [entry('service', service, 1)] });
  return true;
}

/**
 * One request on /multiservice-tokenquota: check service_1 and service_2 with hits_addend 0; Envoy routes to
 * the first service whose quota passed (the metadata of passed descriptors, first one kept) and debits it on
 * the response path. Which service served it, or undefined when refused.
 */
async function multiServiceRequest(
  client: Client,
  domain: string,
  s1: string,
  s2: string,
): Promise<string | undefined> {
  const check = await client.call({ domain, descriptors: [entry('service', s1, 0), entry('service', s2, 0)] });
  if (check.overall_code !== 'OK') return undefined;
  const served = check.statuses[0].code === 'OK' ? s1 : s2;
  await client.call({ domain, descriptors: [entry('service', served, 1)] });
  return served;
}

const { run, skipped } = await variants();
if (skipped) test(skipped, { skip: skipped }, () => {});

for (const variant of run) {
  describe(`Envoy's token quotas over gRPC (${variant.name})`, () => {
    const ctx = serving(QUOTAS, variant);
    const multi = serving(QUOTAS, variant);

    test("Envoy's token-quota pattern never limits (finding 1): token-quota.sh's requests 1-3 pass, the 4th is refused", async () => {
      const served = [];
      for (let i = 0; i < 8; i++) served.push(await tokenQuotaRequest(ctx.client, 'rl', 'service_2'));
      // Envoy counts the 3rd debit past the limit (INCRBY, then compare): 3 > 2, so every later cost-0 check is OVER_LIMIT.
      assert.deepEqual(served, [true, true, true, false, false, false, false, false]);
    });

    test('multiservice-tokenquota.sh: service_1 serves 2, service_2 serves 3, the 6th is refused', async () => {
      const order = [];
      for (let i = 0; i < 7; i++) order.push(await multiServiceRequest(multi.client, 'rl', 'service_1', 'service_2'));
      assert.deepEqual(order, ['service_1', 'service_1', 'service_2', 'service_2', 'service_2', undefined, undefined]);
    });

    test('a cost above the whole limit is counted (a long LLM answer): the next cost-0 check is OVER_LIMIT', async () => {
      const key = `t-${process.pid}-${Date.now()}`;
      const debit = await ctx.client.call({ domain: 'rl', descriptors: [entry('tokens', key, 150)] });
      assert.equal(debit.overall_code, 'OVER_LIMIT');
      const check = await ctx.client.call({ domain: 'rl', descriptors: [entry('tokens', key, 0)] });
      assert.equal(check.overall_code, 'OVER_LIMIT');
    });
  });

  describe(`Envoy's wire format over gRPC (${variant.name})`, () => {
    const plain = serving(QUOTAS, variant);
    const headers = serving(QUOTAS, variant, {
      limitResponseHeadersEnabled: true,
      limitLimitHeader: 'X-Limit',
      limitRemainingHeader: 'X-Left',
      limitResetHeader: 'X-Reset',
    });
    const rich = serving(QUOTAS, variant, { answers: 'sluice' });
    /** Envoy's duration_until_reset at `ms`: unit − now % unit, in whole seconds. */
    const envoyReset = (ms: number, unitSeconds: number) => unitSeconds - (Math.floor(ms / 1000) % unitSeconds);

    test('Envoy wire details (finding 3): no response_headers_to_add unless asked, duration_until_reset in whole seconds as Envoy computes it', async () => {
      const key = `w-${process.pid}-${Date.now()}`;
      const t0 = Date.now();
      const r = await plain.client.call({ domain: 'rl', descriptors: [entry('tokens', key)] });
      const t1 = Date.now();
      assert.deepEqual(r.response_headers_to_add ?? [], []);
      const d = r.statuses[0].duration_until_reset;
      assert.equal(d.nanos ?? 0, 0, `whole seconds: ${JSON.stringify(r)}`);
      assert.ok(
        [envoyReset(t0, 3600), envoyReset(t1, 3600)].includes(Number(d.seconds)),
        `${d.seconds} s is unit − now % unit`,
      );
      assert.deepEqual([r.statuses[0].code, r.statuses[0].limit_remaining], ['OK', 99], JSON.stringify(r));
    });

    test('LIMIT_RESPONSE_HEADERS_ENABLED adds its three headers under the names asked, for the status closest to its limit', async () => {
      const key = `h-${process.pid}-${Date.now()}`;
      const t0 = Date.now();
      const r = await headers.client.call({
        domain: 'rl',
        descriptors: [entry('tokens', key, 40), entry('service', 'service_1')],
      });
      const got = Object.fromEntries(
        r.response_headers_to_add.map((h: { key: string; value: string }) => [h.key, h.value]),
      );
      assert.deepEqual(Object.keys(got), ['X-Limit', 'X-Left', 'X-Reset']);
      assert.deepEqual([got['X-Limit'], got['X-Left']], ['1', '0'], 'service_1 has 0 of 1 left, tokens 60 of 100');
      assert.ok(Math.abs(Number(got['X-Reset']) - envoyReset(t0, 3600)) <= 1);
    });

    test('a quota over its limit is OVER_LIMIT in its status while the request passes on another quota, as Envoy answers (multiservice routing reads it)', async () => {
      const spent = await headers.client.call({
        domain: 'rl',
        descriptors: [entry('service', 'service_1'), entry('service', 'service_2')],
      });
      assert.deepEqual(
        [spent.overall_code, spent.statuses.map((s: { code: string }) => s.code)],
        ['OK', ['OVER_LIMIT', 'OK']],
      );
      assert.equal(spent.statuses[0].limit_remaining ?? 0, 0);
    });

    test("--answers sluice keeps sluice's richer answers: millisecond durations and RateLimit headers with the policy", async () => {
      const key = `r-${process.pid}-${Date.now()}`;
      const r = await rich.client.call({ domain: 'rl', descriptors: [entry('tokens', key)] });
      assert.deepEqual(
        r.response_headers_to_add.map((h: { key: string }) => h.key),
        ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
      );
      assert.equal(r.response_headers_to_add[0].value, '100, 100;w=3600');
    });
  });

  describe(`STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true gives sluice's counting (${variant.name})`, () => {
    const ctx = serving(QUOTAS, variant, { stopCacheKeyIncrementWhenOverlimit: true });

    test('a refused debit changes nothing: the filled quota keeps passing cost-0 checks (the behaviour Envoy documents for the setting)', async () => {
      const served = [];
      for (let i = 0; i < 5; i++) served.push(await tokenQuotaRequest(ctx.client, 'rl', 'service_2'));
      assert.deepEqual(served, [true, true, true, true, true]);
    });
  });
}

test("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT and the header settings are read under their Envoy names, beneath sluice's own", async () => {
  const { readSettings } = await import('../../src/server/config/settings.js');
  const envoy = readSettings(['--config', 'x.yaml'], {
    STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true',
    LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
    LIMIT_LIMIT_HEADER: 'X-Limit',
    LIMIT_REMAINING_HEADER: 'X-Left',
    LIMIT_RESET_HEADER: 'X-Reset',
  });
  assert.deepEqual(
    [
      envoy.stopCacheKeyIncrementWhenOverlimit,
      envoy.limitResponseHeadersEnabled,
      envoy.limitLimitHeader,
      envoy.limitRemainingHeader,
      envoy.limitResetHeader,
    ],
    [true, true, 'X-Limit', 'X-Left', 'X-Reset'],
  );
  const defaults = readSettings(['--config', 'x.yaml'], {});
  assert.deepEqual(
    [defaults.stopCacheKeyIncrementWhenOverlimit, defaults.limitResponseHeadersEnabled, defaults.answers],
    [false, false, 'envoy'],
  );
  assert.equal(
    readSettings(['--config', 'x.yaml'], {
      STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'true',
      SLUICE_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: 'false',
    }).stopCacheKeyIncrementWhenOverlimit,
    false,
    "sluice's name wins",
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml'], { LIMIT_LIMIT_HEADER: 'X Limit' }),
    /LIMIT_LIMIT_HEADER must be an HTTP header name such as X-RateLimit-Limit, got "X Limit"/,
  );
});

test("countRejected is the library's policy option, off by default: a rejected request changes no state unless asked", () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const plain = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 2, window: '1m' },
    store: new MemoryStore(),
    clock,
  });
  const counting = new Limiter({
    policy: { algorithm: 'fixed-window', limit: 2, window: '1m', countRejected: true },
    store: new MemoryStore(),
    clock,
  });
  for (const l of [plain, counting]) for (let i = 0; i < 3; i++) l.limitSync('k');
  assert.deepEqual(
    [plain.limitSync('k', { cost: 0 }).allowed, counting.limitSync('k', { cost: 0 }).allowed],
    [true, false],
  );
  assert.throws(() => plain.limitSync('k', { cost: 3 }), { code: 'ERR_SLUICE_COST_EXCEEDS_CAPACITY' });
  now += 60_000;
  assert.deepEqual(
    [
      counting.limitSync('k', { cost: 0 }).allowed,
      counting.limitSync('k', { cost: 5 }).allowed,
      counting.limitSync('k', { cost: 0 }).allowed,
    ],
    [true, false, false],
  );
  assert.throws(
    () => new Limiter({ policy: { algorithm: 'gcra', limit: 2, window: '1m', countRejected: true } }),
    /'countRejected' applies to a fixed-window of a duration \(Envoy's counting\), not gcra/,
  );
  assert.throws(
    () => new Gate({ policy: { name: 'q', algorithm: 'fixed-window', limit: 2, window: '1m', countRejected: true } }),
    /Gate policy "q": 'countRejected' counts every refused try/,
  );
});
