// The adapter's plain commands (command(), as redisCommand makes them): SET NX of a value sent as bytes,
// and MGET with every value back as its bytes, on each client major sluice supports (ioredis 5 and 6,
// node-redis 4, 5 and 6), standalone and Cluster. A feature's packed binary values (the guard's records)
// would change if a client encoded or decoded them as UTF-8: every byte value is created and must come
// back. And its cork(): a turn's calls on ioredis leave in one write.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { type Cluster, Redis } from 'ioredis';
import { Redis as Redis5 } from 'ioredis5';
import { createClient } from 'redis';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';
import { adapt, redisCommand } from '../../src/stores/redis/adapter.js';
import { RedisConnection } from '../../src/stores/redis/connection.js';
import { defineScript } from '../../src/stores/redis/script.js';
import { redisUrl, runPrefix, useCluster } from '../../../testing/src/harness.js';

const BYTES = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
const base = runPrefix('adapter-values');
const SET = redisCommand('SET');
const MGET_BYTES = redisCommand('MGET', { readonly: true, bytes: true });

/**
 * Creates BYTES under one key of a hash tag (a second create refused), then reads it with a key that has
 * no value between, and with `writer` as raw bytes.
 */
async function roundTrip(client: unknown, writer: Redis | Cluster, name: string): Promise<void> {
  const key = `${base}:{${name}}:bytes`;
  const adapter = adapt(client);
  assert.equal(await adapter.command(SET, [key], [Buffer.from(BYTES), 'PX', '60000', 'NX']), 'OK', `${name}: created`);
  assert.equal(
    await adapter.command(SET, [key], ['other', 'PX', '60000', 'NX']),
    null,
    `${name}: a second create refused`,
  );
  assert.deepEqual([...(await writer.getBuffer(key))!], [...BYTES], `${name}: every byte written as itself`);
  const ttl = await writer.pttl(key);
  assert.ok(ttl > 50_000 && ttl <= 60_000, `${name}: PX set, got ${ttl}`);
  const values = (await adapter.command(MGET_BYTES, [key, `${base}:{${name}}:none`, key], [])) as (Uint8Array | null)[];
  assert.equal(values.length, 3);
  assert.deepEqual([...values[0]!], [...BYTES], `${name}: every byte back`);
  assert.equal(values[1], null, `${name}: no value is null`);
  assert.deepEqual([...values[2]!], [...BYTES]);
}

test('plain commands (SET NX of bytes, MGET as bytes) on a standalone Redis: ioredis 5 and 6, node-redis 4, 5 and 6', async () => {
  const io = new Redis(redisUrl());
  const io5 = new Redis5(redisUrl());
  const nr4 = createClient4({ url: redisUrl() });
  const nr5 = createClient5({ url: redisUrl() });
  const nr6 = createClient({ url: redisUrl() });
  for (const c of [nr4, nr5, nr6]) c.on('error', () => {});
  await Promise.all([once(io, 'ready'), once(io5, 'ready'), nr4.connect(), nr5.connect(), nr6.connect()]);
  try {
    await roundTrip(io, io, 'ioredis6');
    await roundTrip(io5, io, 'ioredis5');
    await roundTrip(nr4, io, 'redis4');
    await roundTrip(nr5, io, 'redis5');
    await roundTrip(nr6, io, 'redis6');
  } finally {
    io.disconnect();
    io5.disconnect();
    await Promise.all([nr4.quit(), nr5.quit(), nr6.quit()]);
  }
});

test('a turn of calls on ioredis leaves in one write (the socket is corked until the turn ends)', async () => {
  const io = new Redis(redisUrl());
  await once(io, 'ready');
  try {
    const stream = (
      io as unknown as { stream: { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown } }
    ).stream;
    const writes: number[] = [];
    const write = stream._write.bind(stream);
    const writev = stream._writev.bind(stream);
    stream._write = (...a: unknown[]) => (writes.push(1), write(...a));
    stream._writev = (chunks: unknown, cb: unknown) => (writes.push((chunks as unknown[]).length), writev(chunks, cb));
    // The client's health asks the server of itself once per connection (CONFIG GET, INFO): done first.
    let checked!: () => void;
    const done = new Promise<void>((r) => (checked = r));
    const connection = new RedisConnection({
      client: io,
      timeoutMs: 2000,
      owner: 'test',
      report: { meanwhile: 'test', onEvent: (e) => e.type === 'checked' && checked() },
    });
    await done;
    const script = defineScript('one', 'return 1');
    await connection.run(script, [], []); // loads the script
    writes.length = 0;
    assert.deepEqual(
      await Promise.all(Array.from({ length: 5 }, () => connection.run(script, [], []))),
      [1, 1, 1, 1, 1],
    );
    assert.deepEqual(writes, [5], 'five calls, one write of five commands');
  } finally {
    io.disconnect();
  }
});

const ctx = useCluster();

test("plain commands (SET NX of bytes, MGET as bytes) on a Redis Cluster: ioredis, node-redis 4, 5 and 6, routed by the keys' slot", async () => {
  const rootNodes = ctx.cluster.ports.map((port) => ({ url: `redis://127.0.0.1:${port}` }));
  const nr4 = createCluster4({ rootNodes });
  const nr5 = createCluster5({ rootNodes });
  nr4.on('error', () => {});
  nr5.on('error', () => {});
  await Promise.all([nr4.connect(), nr5.connect()]);
  try {
    await roundTrip(ctx.io, ctx.io, 'ioredis-cluster');
    await roundTrip(nr4, ctx.io, 'redis4-cluster');
    await roundTrip(nr5, ctx.io, 'redis5-cluster');
    await roundTrip(ctx.nr, ctx.io, 'redis6-cluster');
  } finally {
    await nr4.quit().catch(() => {});
    await nr5.close().catch(() => {});
  }
});

test('nodeOf() on a Redis Cluster names the master that holds a slot, for ioredis and node-redis 4, 5 and 6; undefined on a standalone client', async () => {
  const rootNodes = ctx.cluster.ports.map((port) => ({ url: `redis://127.0.0.1:${port}` }));
  const nr4 = createCluster4({ rootNodes });
  const nr5 = createCluster5({ rootNodes });
  nr4.on('error', () => {});
  nr5.on('error', () => {});
  await Promise.all([nr4.connect(), nr5.connect()]);
  const io = new Redis(redisUrl());
  const ioReady = once(io, 'ready'); // listened for at once: 'ready' may come before the checks below end
  try {
    // The masters' slot ranges, as the server says: CLUSTER SLOTS is [start, end, [host, port, id], replicas...].
    const ranges = (await ctx.io.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const masterOf = (slot: number) => {
      const r = ranges.find(([start, end]) => slot >= start && slot <= end)!;
      return `${r[2][0]}:${r[2][1]}`;
    };
    for (const [name, client] of [
      ['ioredis', ctx.io],
      ['node-redis 4', nr4],
      ['node-redis 5', nr5],
      ['node-redis 6', ctx.nr],
    ] as const) {
      const adapter = adapt(client);
      for (const slot of [0, 5460, 5461, 10922, 10923, 16383, 1234, 9999])
        assert.equal(adapter.nodeOf(slot), masterOf(slot), `${name}, slot ${slot}`);
    }
    await ioReady;
    assert.equal(adapt(io).nodeOf(0), undefined);
  } finally {
    io.disconnect();
    await nr4.quit().catch(() => {});
    await nr5.close().catch(() => {});
  }
});
