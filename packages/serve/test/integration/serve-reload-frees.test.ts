// Issue #45 findings 4 and 5 on the real service over loopback. Finding 4: a reload never freed a dropped
// or changed rule's memory table (heap after each 50,000 -> 7 rule cycle: 9, 108, 207, 306, 405 MB), and
// eviction filtered and sorted every table ever bound. Finding 5: a big reload stalled decisions, much of
// it building a store table for every new rule at once. These tests count tables and keys, never time:
// how long a reload holds the thread is measured in bench/reload.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../../sluice/src/stores/memory.js';
import type { RunningService } from '../../src/server/serve.js';
import { post, start, TempConfig } from './serve-helpers.js';

function rules(n: number, limit: number): string {
  let y = 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1000 }\n';
  for (let i = 0; i < n; i++)
    y += `  - key: tenant\n    value: t${i}\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
  return y;
}

const check = (port: number, descriptor: Record<string, string>) =>
  post(port, '/v1/check', { domain: 'api', descriptors: [descriptor] });

/** The service's memory store (every rule's limiter shares it). */
function storeOf(svc: RunningService): MemoryStore {
  const store = svc.service.store;
  assert.ok(store instanceof MemoryStore);
  return store;
}

/** Live tables in the store: the store's list of tables bound and not closed. */
const liveTables = (store: MemoryStore) =>
  (store as unknown as { tables: { size?: number; length?: number } }).tables.size ??
  (store as unknown as { tables: unknown[] }).tables.length;

describe('reload frees what it drops (#45 findings 4 and 5)', () => {
  const cfg = new TempConfig(rules(100, 5));
  after(() => cfg.remove());

  test('reload frees the memory table of a dropped or changed rule: 10 cycles of 100 -> 6 rules leave only the live tables and keys', async () => {
    cfg.write(rules(100, 5));
    const { svc } = await start(cfg.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false });
    try {
      const store = storeOf(svc);
      for (let cycle = 0; cycle < 10; cycle++) {
        // Every rule decides once, so each has a table holding one key.
        cfg.write(rules(100, 5 + (cycle % 2)));
        assert.equal(await svc.reload('test'), true);
        for (let i = 0; i < 100; i++) assert.equal((await check(svc.httpPort, { tenant: `t${i}` })).status, 200);
        assert.equal(liveTables(store), 100, `cycle ${cycle}: 100 rules decided, 100 tables`);
        assert.equal(store.size, 100);
        // 6 rules stay (the first half of the cycles unchanged, the others with a changed limit): the
        // 94 dropped rules' tables go at the swap, and a changed rule's table with them.
        cfg.write(rules(6, cycle < 5 ? 5 + (cycle % 2) : 9));
        assert.equal(await svc.reload('test'), true);
        const kept = cycle < 5 ? 6 : 0;
        assert.equal(liveTables(store), kept, `cycle ${cycle}: only the tables of rules carried over`);
        assert.equal(store.size, kept, `cycle ${cycle}: only their keys`);
      }
      // A changed rule started fresh: its new table holds only what it decided since.
      const r = await check(svc.httpPort, { tenant: 't0' });
      assert.equal(r.json.statuses[0].limit, 9);
      assert.equal(r.json.statuses[0].remaining, 8);
      assert.equal(liveTables(store), 1);
    } finally {
      await svc.close();
    }
  });

  test("reload frees the keys of dropped rules: a store at --max-keys full of their denying keys admits a live rule's new key", async () => {
    // 50 rules of 1 a minute, each used up by one request: 50 denying keys, which eviction never drops.
    cfg.write(rules(50, 1));
    const { svc } = await start(
      cfg.path,
      { name: 'memory', settings: {} },
      { grpcPort: -1, watch: false, maxKeys: 50 },
    );
    try {
      for (let i = 0; i < 50; i++)
        assert.equal((await check(svc.httpPort, { tenant: `t${i}` })).json.statuses[0].remaining, 0);
      const full = await check(svc.httpPort, { user: 'before-reload' });
      assert.equal(full.json.statuses[0].reason, 'store-full', 'the store is full of denying keys');
      cfg.write(rules(0, 1));
      assert.equal(await svc.reload('test'), true);
      const r = await check(svc.httpPort, { user: 'after-reload' });
      assert.equal(r.status, 200);
      assert.equal(r.json.statuses[0].reason, undefined, "the dropped rules' keys no longer fill the store");
      assert.equal(r.json.statuses[0].remaining, 999, 'admitted and counted');
    } finally {
      await svc.close();
    }
  });

  test('a reload of 5,000 rules binds no store table until a rule decides', async () => {
    cfg.write(rules(3, 5));
    const { svc } = await start(cfg.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false });
    try {
      await check(svc.httpPort, { tenant: 't0' });
      const store = storeOf(svc);
      cfg.write(rules(5_000, 5));
      assert.equal(await svc.reload('test'), true);
      assert.equal(liveTables(store), 1, 'the rule carried over keeps its table; the 4,997 new ones have none yet');
      assert.equal((await check(svc.httpPort, { tenant: 't4999' })).json.statuses[0].remaining, 4);
      assert.equal(liveTables(store), 2);
    } finally {
      await svc.close();
    }
  });

  test('a reload places nested descriptors: a node with children gets a level of its own, a leaf shares the empty one', async () => {
    cfg.write(rules(1, 5));
    const { svc } = await start(cfg.path, { name: 'memory', settings: {} }, { grpcPort: -1, watch: false });
    try {
      cfg.write(
        'domain: api\ndescriptors:\n  - key: tenant\n    value: a\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n    descriptors:\n      - key: path\n        value: /x*\n        rate_limit: { unit: minute, requests_per_unit: 4 }\n      - key: user\n        rate_limit: { unit: minute, requests_per_unit: 5 }\n        descriptors:\n          - key: verb\n            rate_limit: { unit: minute, requests_per_unit: 6 }\n  - key: tenant\n    value: b\n    rate_limit: { unit: minute, requests_per_unit: 7 }\n',
      );
      assert.equal(await svc.reload('test'), true);
      const limit = async (entries: [string, string][]) => {
        const r = await post(svc.httpPort, '/json', {
          domain: 'api',
          descriptors: [{ entries: entries.map(([key, value]) => ({ key, value })) }],
        });
        return r.json.statuses[0].currentLimit?.requestsPerUnit;
      };
      assert.equal(await limit([['tenant', 'a']]), 3);
      assert.equal(
        await limit([
          ['tenant', 'a'],
          ['path', '/xyz'],
        ]),
        4,
      );
      assert.equal(
        await limit([
          ['tenant', 'a'],
          ['user', 'u'],
        ]),
        5,
      );
      assert.equal(
        await limit([
          ['tenant', 'a'],
          ['user', 'u'],
          ['verb', 'GET'],
        ]),
        6,
      );
      assert.equal(await limit([['tenant', 'b']]), 7);
      assert.equal(
        await limit([
          ['tenant', 'b'],
          ['user', 'u'],
        ]),
        undefined,
        'a leaf has no children',
      );
    } finally {
      await svc.close();
    }
  });
});
