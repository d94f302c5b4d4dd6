/**
 * Envoy's RateLimitRequest described once (envoy/service/ratelimit/v3/rls.proto, with RateLimitDescriptor,
 * its Entry and RateLimitOverride from envoy/extensions/common/ratelimit/v3/ratelimit.proto): each field's
 * proto name, its proto3 JSON name, its number and wire type, and the message it holds; and the bounds a
 * request is held to whatever its transport. The protobuf decoder (rls-proto.ts) takes its tags from here,
 * the JSON decoders (json-decode.ts, json-fast.ts) their field names and the depth a body may nest, and every
 * path its bounds, checked by the one checkRequest below (the service runs it on every request, whatever
 * decoded it; the JSON decoders run its count checks before they build anything). A field added to the
 * request is added here first.
 */
import { BadRequest, MAX_UINT32 } from './rls-types.js';
import type { RlsRequest } from './rls-types.js';

/** Protobuf wire types the request uses: varint and length-delimited. */
export type WireType = 0 | 2;

export interface FieldSpec {
  /** The proto name, which protojson accepts too: `hits_addend`. */
  readonly name: string;
  /** The proto3 JSON (lowerCamel) name: `hitsAddend`. */
  readonly json: string;
  readonly number: number;
  readonly wire: WireType;
  /** The protobuf tag byte(s) as one varint value: number << 3 | wire. */
  readonly tag: number;
  /** The message a length-delimited field holds, if it is one. */
  readonly message?: MessageSpec;
  /** A list in JSON, a repeated field in protobuf. */
  readonly repeated: boolean;
}

export interface MessageSpec {
  readonly name: string;
  readonly fields: readonly FieldSpec[];
  /** The highest field number: a field numbered up to it that arrives with another wire type is malformed. */
  readonly known: number;
}

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

function field(
  name: string,
  number: number,
  wire: WireType,
  options: { message?: MessageSpec; repeated?: boolean } = {},
): FieldSpec {
  return {
    name,
    json: camel(name),
    number,
    wire,
    tag: (number << 3) | wire,
    repeated: options.repeated ?? false,
    ...(options.message ? { message: options.message } : {}),
  };
}

function message<F extends Record<string, FieldSpec>>(name: string, fields: F): MessageSpec & { readonly f: F } {
  const list = Object.values(fields);
  return { name, fields: list, known: Math.max(...list.map((x) => x.number)), f: fields };
}

const VARINT = 0;
const LEN = 2;

/** RateLimitDescriptor.Entry {string key = 1; string value = 2}. */
export const ENTRY = message('Entry', { key: field('key', 1, LEN), value: field('value', 2, LEN) });

/** RateLimitDescriptor.RateLimitOverride {uint32 requests_per_unit = 1; RateLimitUnit unit = 2}. */
export const OVERRIDE = message('RateLimitOverride', {
  requestsPerUnit: field('requests_per_unit', 1, VARINT),
  unit: field('unit', 2, VARINT),
});

/** google.protobuf.UInt64Value {uint64 value = 1}: a descriptor's hits_addend. In JSON, the bare number. */
export const UINT64_VALUE = message('UInt64Value', { value: field('value', 1, VARINT) });

/** RateLimitDescriptor {repeated Entry entries = 1; RateLimitOverride limit = 2; UInt64Value hits_addend = 3}. */
export const DESCRIPTOR = message('RateLimitDescriptor', {
  entries: field('entries', 1, LEN, { message: ENTRY, repeated: true }),
  limit: field('limit', 2, LEN, { message: OVERRIDE }),
  hitsAddend: field('hits_addend', 3, LEN, { message: UINT64_VALUE }),
});

/** RateLimitRequest {string domain = 1; repeated RateLimitDescriptor descriptors = 2; uint32 hits_addend = 3}. */
export const REQUEST = message('RateLimitRequest', {
  domain: field('domain', 1, LEN),
  descriptors: field('descriptors', 2, LEN, { message: DESCRIPTOR, repeated: true }),
  hitsAddend: field('hits_addend', 3, VARINT),
});

/** Every name a message's field may have in JSON (proto and lowerCamel), as protojson accepts them. */
export function jsonNames(m: MessageSpec): readonly string[] {
  const out: string[] = [];
  for (const f of m.fields) {
    out.push(f.name);
    if (f.json !== f.name) out.push(f.json);
  }
  return out;
}

/** A field's value under either JSON name: `hits_addend` or `hitsAddend`. */
export function jsonField(o: Record<string, unknown>, f: FieldSpec): unknown {
  const a = o[f.name];
  return a !== undefined || f.json === f.name ? a : o[f.json];
}

/**
 * How deep a message nests in JSON: an object per message, a list per repeated field. A UInt64Value is a
 * bare number in JSON, so it adds nothing. Walks this file's own finite description, never a request.
 */
function jsonDepth(m: MessageSpec): number {
  let deepest = 0;
  for (const f of m.fields) {
    if (f.message === undefined || f.message === UINT64_VALUE) continue;
    const d = jsonDepth(f.message) + (f.repeated ? 1 : 0);
    if (d > deepest) deepest = d;
  }
  return 1 + deepest;
}

/** The bounds a request is held to, on every transport; beyond them it is a 400 (INVALID_ARGUMENT) naming the bound. */
export const REQUEST_BOUNDS = {
  /** Nesting of a JSON body: RateLimitRequest > descriptors > descriptor > entries > entry is 5. */
  maxJsonDepth: jsonDepth(REQUEST),
  /** Descriptors in one request: Envoy sends one per rate_limits action that applies, a handful. */
  maxDescriptors: 64,
  /** Entries in one descriptor: a rule nests a few levels deep. */
  maxEntries: 32,
  /** UTF-16 units in an entry's key or value: each becomes part of a key the store keeps. */
  maxTextLength: 4096,
} as const;

/**
 * Refuses a request that holds more descriptors than a request may. `field` names the list as the client
 * wrote it ('descriptors' in every body the service reads).
 */
export function checkDescriptorCount(n: number, field = 'descriptors'): void {
  if (n > REQUEST_BOUNDS.maxDescriptors)
    throw new BadRequest(`'${field}' holds ${n} descriptors; a request holds at most ${REQUEST_BOUNDS.maxDescriptors}`);
}

/**
 * Refuses descriptor `i` if it holds more entries than a descriptor may. Its entries are named as the
 * client wrote them, `descriptors[i]` + `suffix`: `descriptors[0].entries`, or, with suffix '', /v1/check's
 * `descriptors[0]` (an object of key: value). The name is built only for the refusal: this runs on every
 * descriptor of every request.
 */
export function checkEntryCount(n: number, i: number, suffix = '.entries'): void {
  if (n > REQUEST_BOUNDS.maxEntries)
    throw new BadRequest(
      `'descriptors[${i}]${suffix}' holds ${n} entries; a descriptor holds at most ${REQUEST_BOUNDS.maxEntries}`,
    );
}

/**
 * The one check of what a decoded request may hold, whatever its transport (protobuf, either JSON decoder,
 * /v1/check, nginx headers): something to decide, each bound of REQUEST_BOUNDS, no empty key or value, and
 * hits that fit Envoy's uint32 hits_addend. Throws BadRequest naming the field, the value and the bound.
 */
export function checkRequest(req: RlsRequest): void {
  const n = req.descriptors.length;
  if (n === 0) throw new BadRequest(`'descriptors' must not be empty`);
  checkDescriptorCount(n);
  for (let i = 0; i < n; i++) {
    const d = req.descriptors[i]!;
    if (d.entries.length === 0) throw new BadRequest(`descriptors[${i}]: 'entries' must not be empty`);
    checkEntryCount(d.entries.length, i);
    for (let j = 0; j < d.entries.length; j++) {
      const e = d.entries[j]!;
      if (e.key === '') throw new BadRequest(`descriptors[${i}].entries[${j}]: 'key' must not be empty`);
      if (e.value === '') throw new BadRequest(`descriptors[${i}].entries[${j}]: 'value' must not be empty`);
      if (e.key.length > REQUEST_BOUNDS.maxTextLength || e.value.length > REQUEST_BOUNDS.maxTextLength) {
        const which = e.key.length > REQUEST_BOUNDS.maxTextLength ? 'key' : 'value';
        throw new BadRequest(
          `descriptors[${i}].entries[${j}]: '${which}' is ${e[which].length} characters long; at most ${REQUEST_BOUNDS.maxTextLength}`,
        );
      }
    }
    // Envoy's hits_addend is a uint32; a cost past it only breaks counters (a double stops counting ones).
    const hits = d.hitsAddend ?? (req.hitsAddend === 0 ? 1 : req.hitsAddend);
    if (hits > MAX_UINT32)
      throw new BadRequest(
        `descriptors[${i}].hits_addend is ${hits}; at most ${MAX_UINT32} (Envoy's hits_addend is a uint32)`,
      );
  }
}
