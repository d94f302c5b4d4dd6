/**
 * The `regions` option of a RedisStore, checked when a limiter binds the store, and which policies the
 * 'regions' strategy can keep across regions (with the reason for each it refuses).
 */
import { SluiceError, show } from '../../core/index.js';
import type { Policy } from '../../core/index.js';
import { check } from '../../core/option-checks.js';
import type { PeerRegion } from '../../stores/script-runner.js';

export interface RegionsOptions {
  /** This region's name, as its peers list it: letters, digits, '.', '_', '-'. */
  name: string;
  /** Every other region by name: its home Redis client (reached over the link between regions). */
  peers: Record<string, unknown>;
  /** How often this process pushes its region's counts to every peer (and reads who it heard from). Default 100 ms. */
  exchangeMs?: number;
  /** A peer not heard from for this long is cut off: it counts as spending its whole share. Default max(1000, 10 × exchangeMs). */
  partitionAfterMs?: number;
  /** Each region's share of the limit while cut off (weights, this region's included). Default: equal. */
  shares?: Record<string, number>;
  /** Longest wait for a peer's Redis per push. Default 1000 ms. */
  peerTimeoutMs?: number;
  /** Most keys this process remembers counts of, to push them (the oldest is dropped first). Default 100,000. */
  maxKeys?: number;
}

export interface Regions {
  readonly name: string;
  readonly peers: readonly PeerRegion[];
  readonly exchangeMs: number;
  readonly partitionAfterMs: number;
  /** Each region's share of the limit, summing to 1, this region's included. */
  readonly shares: ReadonlyMap<string, number>;
  readonly maxKeys: number;
}

const OPTION_NAMES = ['name', 'peers', 'exchangeMs', 'partitionAfterMs', 'shares', 'peerTimeoutMs', 'maxKeys'];
const REGION_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function invalid(message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `RedisStore 'regions': ${message}`);
}

function positive(field: string, value: unknown, fallback: number, integer = false): number {
  if (value === undefined) return fallback;
  const name = `RedisStore 'regions': '${field}'`;
  return integer ? check.positiveInteger(value, name) : check.positiveNumber(value, name, { unit: 'milliseconds' });
}

export function checkRegions(value: unknown): Regions {
  if (typeof value !== 'object' || value === null)
    invalid(`must be an object such as { name: 'eu', peers: { us: usClient } }, got ${show(value)}`);
  const o = value as RegionsOptions;
  for (const k of Object.keys(o))
    if (!OPTION_NAMES.includes(k)) invalid(`unknown option '${k}'; known options are ${OPTION_NAMES.join(', ')}`);
  if (typeof o.name !== 'string' || !REGION_NAME.test(o.name))
    invalid(`'name' must be 1 to 64 letters, digits, '.', '_' or '-', got ${show(o.name)}`);
  if (typeof o.peers !== 'object' || o.peers === null || Object.keys(o.peers).length === 0) {
    invalid(
      `'peers' must name at least one other region and its Redis client, such as { us: usClient }, got ${show(o.peers)}`,
    );
  }
  const exchangeMs = positive('exchangeMs', o.exchangeMs, 100);
  const partitionAfterMs = positive('partitionAfterMs', o.partitionAfterMs, Math.max(1000, 10 * exchangeMs));
  if (partitionAfterMs <= exchangeMs)
    invalid(`'partitionAfterMs' must be longer than 'exchangeMs' ${exchangeMs}, got ${show(partitionAfterMs)}`);
  const timeoutMs = positive('peerTimeoutMs', o.peerTimeoutMs, 1000);
  const maxKeys = positive('maxKeys', o.maxKeys, 100_000, true);
  const peers: PeerRegion[] = [];
  for (const [name, client] of Object.entries(o.peers)) {
    if (!REGION_NAME.test(name))
      invalid(`peer region names must be 1 to 64 letters, digits, '.', '_' or '-', got ${show(name)}`);
    if (name === o.name) invalid(`'peers' lists this region ${show(name)} itself; list only the others`);
    if (typeof client !== 'object' || client === null)
      invalid(`peer ${show(name)} must be a Redis client (ioredis, node-redis, valkey-glide), got ${show(client)}`);
    peers.push({ name, client, timeoutMs });
  }
  const names = [o.name, ...peers.map((p) => p.name)];
  const weights = new Map<string, number>();
  if (o.shares === undefined) {
    for (const n of names) weights.set(n, 1);
  } else {
    if (typeof o.shares !== 'object' || o.shares === null)
      invalid(`'shares' must be an object of weights by region, got ${show(o.shares)}`);
    for (const k of Object.keys(o.shares))
      if (!names.includes(k)) invalid(`'shares' names region ${show(k)}, which is neither this region nor a peer`);
    for (const n of names) {
      const w = (o.shares as Record<string, unknown>)[n];
      weights.set(
        n,
        check.positiveNumber(w, `RedisStore 'regions': 'shares.${n}'`, { note: '(every region needs a share)' }),
      );
    }
  }
  const total = [...weights.values()].reduce((a, b) => a + b, 0);
  const shares = new Map([...weights].map(([n, w]) => [n, w / total] as const));
  return { name: o.name, peers, exchangeMs, partitionAfterMs, shares, maxKeys };
}

/**
 * Why a policy cannot be kept across regions, or undefined if it can. Only what is a count that grows
 * within a window merges as a G-counter (max per region): see docs/distributed.md, "Regions".
 */
export function refusal(p: Policy): string | undefined {
  const why: Record<string, string> = {
    'token-bucket':
      'its state refills with time, so a region count cannot be merged by max (a G-counter only grows); use fixed-window',
    gcra: 'its state (the TAT) moves with time, not a count that only grows, so regions cannot merge it by max; use fixed-window',
    'leaky-bucket': 'its state drains with time, so regions cannot merge it by max; use fixed-window',
    'sliding-log': 'it keeps every request time (O(limit) per key), which regions would have to ship; use fixed-window',
    'sliding-window':
      'not built across regions yet (its two windows are counts and could be merged the same way); use fixed-window',
    concurrency:
      'a slot is released, so its count falls: it cannot be merged by max, and one slot across regions needs one owner',
  };
  if (p.algorithm !== 'fixed-window') return why[p.algorithm] ?? 'it is not a count per window';
  if (p.calendar !== undefined)
    return `its calendar window ${show(p.calendar.unit)} is not epoch-aligned; use a fixed window`;
  if (p.block !== undefined) return "its 'blockFor' ban is state of its own that regions do not exchange";
  return undefined;
}
