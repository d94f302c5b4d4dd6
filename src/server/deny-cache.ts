/**
 * Envoy's local cache (LOCAL_CACHE_SIZE_IN_BYTES): a key the store said is over its limit stays over until
 * its retry time, so repeats are answered here without a round trip. Exact for admissions: it only ever
 * answers "over", and only for a request at least as heavy as the one the store refused, before the time
 * the store said a retry could pass. Bounded: at `maxEntries` it forgets everything and starts again.
 */
export class LocalDenyCache {
  private readonly entries = new Map<string, { untilMs: number; hits: number }>();

  constructor(private readonly maxEntries = 100_000) {}

  /** Milliseconds until the cached refusal expires, or 0 when the store must decide. */
  check(rule: string, key: string, hits: number, nowMs: number): number {
    const k = `${rule}\u0000${key}`;
    const e = this.entries.get(k);
    if (e === undefined) return 0;
    if (e.untilMs <= nowMs) {
      this.entries.delete(k);
      return 0;
    }
    return hits >= e.hits ? e.untilMs - nowMs : 0;
  }

  add(rule: string, key: string, hits: number, untilMs: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(`${rule}\u0000${key}`, { untilMs, hits });
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
