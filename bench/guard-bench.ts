// Guard benchmark: check+record pairs per second on the memory store, and the guard's memory during a flood
// of failures from 1,000,000 distinct addresses. Run: node --expose-gc --conditions=sluice-source --import tsx bench/guard-bench.ts
import { Guard, MemoryGuardState } from '../packages/guard/src/index.js';
import { KeyedHasher } from '../packages/guard/src/keyed-hash.js';
import { MemoryStore } from '../packages/sluice/src/index.js';
import { floodIp, pairsPerSecond } from './lib/guard-mix.mjs';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

/** Live JS heap plus typed-array backing stores (slabs live outside the JS heap). */
function heap(): number {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

async function throughput(pairs: number): Promise<void> {
  const rate = await pairsPerSecond(Guard, pairs);
  console.log(
    `memory store: ${Math.round(rate).toLocaleString('en')} check+record pairs/s (${(1e6 / rate).toFixed(2)} µs per pair, ${pairs.toLocaleString('en')} pairs, 75% successes)`,
  );
}

async function flood(addresses: number, options: { maxSources?: number; maxKeys?: number }): Promise<void> {
  let now = 1_760_000_000_000;
  const base = heap();
  const state = new MemoryGuardState(options.maxSources === undefined ? {} : { maxSources: options.maxSources });
  const store = new MemoryStore(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys });
  const guard = new Guard({
    secret: 'bench-secret-0123456789abcdef',
    clock: () => now,
    random: () => 0.5,
    state,
    store,
  });
  const t0 = performance.now();
  for (let i = 0; i < addresses; i++) {
    now += 1;
    // One failure per address on one of 1,000 accounts: a stuffing flood spread over the address space.
    await guard.record({ account: `victim${i % 1000}`, ip: floodIp(i), success: false });
  }
  const ms = performance.now() - t0;
  const used = heap() - base;
  console.log(
    `flood of ${addresses.toLocaleString('en')} addresses (one failure each), MemoryGuardState maxSources ${state.maxSources.toLocaleString('en')}, MemoryStore maxKeys ${store.maxKeys.toLocaleString('en')}:\n` +
      `  ${(used / 2 ** 20).toFixed(0)} MiB held after it: ${state.sourceCount.toLocaleString('en')} source records (address and subnet), ${store.size.toLocaleString('en')} bucket keys (address, subnet, pair), ${state.accountCount} accounts;\n` +
      `  ${Math.round(used / (state.sourceCount + store.size))} B per record or key on average; ${((ms * 1000) / addresses).toFixed(1)} µs per record()`,
  );
}

/** The guard state alone: bytes per source record, with tags as the guard makes them. */
function sourceRecordBytes(sources: number): void {
  const hasher = new KeyedHasher(Buffer.from('bench-secret-0123456789abcdef'));
  const tags = Array.from({ length: sources }, (_, i) => hasher.tag('ip', floodIp(i)));
  const spec = {
    distinctWindowMs: 1_800_000,
    longDistinctWindowMs: 86_400_000,
    ratioWindowMs: 86_400_000,
    maxDistinct: 21,
  };
  const base = heap();
  const state = new MemoryGuardState({ maxSources: sources });
  for (let i = 0; i < sources; i++)
    state.records.noteSource(tags[i]!, `victim${i % 1000}`, true, 1_760_000_000_000 + i, spec);
  const withTags = heap() - base;
  tags.length = 0;
  const used = heap() - base;
  console.log(
    `guard state: ${Math.round(used / sources)} B per source record, its tag string included (${sources.toLocaleString('en')} records, ${state.sourceCount.toLocaleString('en')} kept); ${Math.round(withTags / sources)} B while the bench also held the tags`,
  );
}

/** The floor under a check+record pair: one keyed tag (HMAC-SHA-256); a pair computes 6 or 7. */
function tagCost(): void {
  const hasher = new KeyedHasher(Buffer.from('bench-secret-0123456789abcdef'));
  for (let i = 0; i < 50_000; i++) hasher.tag('acct', `user${i}@example.com`);
  const n = 500_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) hasher.tag('acct', `user${i}@example.com`);
  console.log(`one keyed tag (HMAC-SHA-256): ${(((performance.now() - t0) * 1000) / n).toFixed(2)} µs`);
}

const pairs = Number(process.argv[2] ?? 200_000);
tagCost();
await throughput(pairs);
sourceRecordBytes(1_000_000);
await flood(1_000_000, {});
await flood(1_000_000, { maxSources: 200_000, maxKeys: 300_000 });
