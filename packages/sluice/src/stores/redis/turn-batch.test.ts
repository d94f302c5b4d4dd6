// The turn batcher (turn-batch.ts) without Redis: what it sends, when, and in which calls.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { TurnBatch } from './turn-batch.js';

interface Op {
  readonly slot: number;
  readonly n: number;
  readonly keys: number;
}

const turnEnd = () => new Promise((r) => setImmediate(r));

function recorder(options: { cluster: boolean; max: number; eager?: boolean; weighed?: boolean }) {
  const calls: Op[][] = [];
  let writes = 0;
  const batch = new TurnBatch<Op>({
    cluster: options.cluster,
    max: options.max,
    ...(options.weighed ? { weigh: (op: Op) => op.keys } : {}),
    eager: options.eager ?? false,
    send: (ops) => calls.push(ops),
    writeNow: () => writes++,
  });
  return { batch, calls, writes: () => writes };
}

test("a turn's operations go once each, in order, in calls of at most max weight (a heavier one alone), one slot each on a Cluster", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ slot: fc.integer({ min: 0, max: 3 }), keys: fc.integer({ min: 1, max: 6 }) }), {
        maxLength: 40,
      }),
      fc.integer({ min: 1, max: 8 }),
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      async (shapes, max, cluster, eager, weighed) => {
        const { batch, calls } = recorder({ cluster, max, eager, weighed });
        const ops = shapes.map((s, n) => ({ ...s, n }));
        for (const op of ops) batch.add(op);
        await turnEnd();
        const sent = calls.flat();
        assert.equal(sent.length, ops.length);
        assert.deepEqual(new Set(sent), new Set(ops));
        for (const call of calls) {
          assert.ok(call.length > 0);
          const weight = call.reduce((w, op) => w + (weighed ? op.keys : 1), 0);
          assert.ok(call.length === 1 || weight <= max, `a call of weight ${weight} over ${max}`);
          if (cluster)
            assert.ok(
              call.every((op) => op.slot === call[0]!.slot),
              'a call across slots',
            );
          for (let i = 1; i < call.length; i++) assert.ok(call[i - 1]!.n < call[i]!.n, 'out of order');
        }
        // One slot's operations keep their order across calls.
        for (let slot = 0; slot <= 3; slot++) {
          const order = sent.filter((op) => !cluster || op.slot === slot).map((op) => op.n);
          if (cluster || slot === 0)
            assert.deepEqual(
              order,
              [...order].sort((a, b) => a - b),
            );
        }
      },
    ),
  );
});

test('operations added in consecutive callbacks of one turn share a call (a process.nextTick flush sent them apart)', async () => {
  const { batch, calls } = recorder({ cluster: false, max: 16 });
  batch.add({ slot: 0, n: 0, keys: 1 });
  process.nextTick(() => batch.add({ slot: 0, n: 1, keys: 1 }));
  setImmediate(() => batch.add({ slot: 0, n: 2, keys: 1 })); // queued after the flush: the next turn's
  await turnEnd();
  assert.deepEqual(
    calls.map((c) => c.map((op) => op.n)),
    [[0, 1]],
  );
  await turnEnd();
  assert.deepEqual(
    calls.map((c) => c.map((op) => op.n)),
    [[0, 1], [2]],
  );
});

test('eager: on a standalone Redis a full call leaves at once and is written; on a Cluster it waits for the turn', async () => {
  const standalone = recorder({ cluster: false, max: 3, eager: true });
  for (let n = 0; n < 4; n++) standalone.batch.add({ slot: n, n, keys: 1 });
  assert.deepEqual(
    standalone.calls.map((c) => c.map((op) => op.n)),
    [[0, 1, 2]],
  );
  assert.equal(standalone.writes(), 1);
  assert.equal(standalone.batch.size, 1);
  await turnEnd();
  assert.deepEqual(
    standalone.calls.map((c) => c.map((op) => op.n)),
    [[0, 1, 2], [3]],
  );

  const weighed = recorder({ cluster: false, max: 4, eager: true, weighed: true });
  weighed.batch.add({ slot: 0, n: 0, keys: 3 });
  weighed.batch.add({ slot: 0, n: 1, keys: 2 }); // would overfill: the first leaves alone
  assert.deepEqual(
    weighed.calls.map((c) => c.map((op) => op.n)),
    [[0]],
  );

  const cluster = recorder({ cluster: true, max: 3, eager: true });
  for (let n = 0; n < 4; n++) cluster.batch.add({ slot: 7, n, keys: 1 });
  assert.equal(cluster.calls.length, 0);
  await turnEnd();
  assert.deepEqual(
    cluster.calls.map((c) => c.map((op) => op.n)),
    [[0, 1, 2], [3]],
  );
});

test("a batch's max must be a positive integer, named", () => {
  for (const max of [0, -1, 1.5, Number.NaN])
    assert.throws(
      () => new TurnBatch({ cluster: false, max, send: () => {} }),
      /TurnBatch: 'max' must be a positive integer/,
    );
});
