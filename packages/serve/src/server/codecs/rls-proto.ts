/**
 * Envoy's RateLimitRequest and RateLimitResponse in protobuf, by hand, for the gRPC endpoint: the bytes of a
 * call's message straight into an RlsRequest, and an RlsResponse straight into the answer's bytes, without
 * protobufjs's reader and writer objects, its message instances and toObject/fromObject trees, or the
 * fromWire/toWire mapping between those and the service's types. Field numbers are those of proto/
 * (rls.proto, ratelimit.proto, base.proto's HeaderValue, google.protobuf's Duration and UInt64Value).
 *
 * The decoder gives exactly what protobufjs (as proto-loader sets it up: keepCase, longs: Number, enums:
 * String, defaults: false) followed by fromWire gave for every well-formed message, and the same BadRequest
 * for an invalid unit or a hits_addend past 2^53-1. Where protobufjs is lax it is not: a varint past 10
 * bytes, a length or fixed field running past its message, a known field with another wire type, and wire
 * types 3, 4, 6 and 7 (groups, which proto3 does not have, included) throw BadRequest('malformed
 * RateLimitRequest: ...'), where protobufjs throws, misreads or truncates. Like protobufjs, an embedded
 * message field that appears twice (a descriptor's `limit` or `hits_addend`) takes the last occurrence
 * whole, where the protobuf spec merges the two; field number 0 is skipped as an unknown field.
 *
 * The encoder writes canonical proto3: fields in number order, zero numbers, UNKNOWN enums and empty strings
 * left out (toWire set them, so protobufjs wrote them; a proto3 reader sees the same message either way).
 */
import type { UnitName } from './rls-types.js';
import { envoyCode, envoyDurationMs, envoyHeaders, envoyRemaining } from './envoy-wire.js';
import type { EnvoyWire } from './envoy-wire.js';
import { DESCRIPTOR, ENTRY, OVERRIDE, REQUEST, UINT64_VALUE } from './rls-request.js';
import { BadRequest } from './rls-types.js';
import { internalized } from './intern.js';
import type { CurrentLimit, RequestDescriptor, RlsRequest, RlsResponse } from './rls-types.js';
import type { Entry } from './rls-types.js';

// ---------------------------------------------------------------------------------------------------------
// Decoding. The cursor and the high half of the last varint live in module variables rather than in a reader
// object: decoding is synchronous and never re-entered, and plain functions over (bytes, end) allocate
// nothing but the request's own objects.

/** Enum RateLimitUnit by number; 0 is UNKNOWN, which fromWire rejects. */
const UNIT_BY_NUMBER: readonly (UnitName | undefined)[] = [
  undefined,
  'SECOND',
  'MINUTE',
  'HOUR',
  'DAY',
  'MONTH',
  'YEAR',
];

/** Buffer's UTF-8 decoder, the one protobufjs reads strings with (invalid sequences become U+FFFD). */
const utf8Slice = (Buffer.prototype as unknown as { utf8Slice(this: Uint8Array, start: number, end: number): string })
  .utf8Slice;

// Tags and field numbers from the request's one description (rls-request.ts).
const DOMAIN_TAG = REQUEST.f.domain.tag;
const DESCRIPTORS = REQUEST.f.descriptors;
const HITS_TAG = REQUEST.f.hitsAddend.tag;
const ENTRIES = DESCRIPTOR.f.entries;
const LIMIT = DESCRIPTOR.f.limit;
const DESCRIPTOR_HITS = DESCRIPTOR.f.hitsAddend;
const KEY = ENTRY.f.key;
const VALUE = ENTRY.f.value;
const REQUESTS_PER_UNIT_TAG = OVERRIDE.f.requestsPerUnit.tag;
const UNIT_TAG = OVERRIDE.f.unit.tag;
const UINT64_TAG = UINT64_VALUE.f.value.tag;

let pos = 0;
/** Bits 32-63 of the last varint read; only a UInt64Value needs them. */
let hi = 0;
/** The first invalid value found (fromWire's message), thrown once the whole message has decoded. */
let invalid: string | undefined;

/** What is being decoded, for malformed()'s message. */
let message = 'RateLimitRequest';

function malformed(what: string, at: number): never {
  throw new BadRequest(`malformed ${message}: ${what} at byte ${at}`);
}

/** A varint's low 32 bits, unsigned; bits 32-63 go to `hi`. Tags and lengths nearly always take one byte. */
function varint(b: Uint8Array, end: number): number {
  if (pos < end) {
    const c = b[pos]!;
    if (c < 0x80) {
      pos++;
      hi = 0;
      return c;
    }
  }
  const start = pos;
  let lo = 0;
  hi = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) malformed('truncated varint', start);
    const c = b[pos++]!;
    if (i < 4) lo |= (c & 0x7f) << (7 * i);
    else if (i === 4) {
      lo |= c << 28; // only the byte's low 4 bits fit; its upper 3 start `hi`
      hi = (c & 0x7f) >> 4;
    } else hi |= (c & 0x7f) << (7 * i - 32); // the 10th byte's bits past 64 fall off, as in protobufjs
    if (c < 0x80) {
      hi >>>= 0;
      return lo >>> 0;
    }
  }
  return malformed('varint longer than 10 bytes', start);
}

/** A length prefix, checked against the end of the enclosing message (protobufjs checks only the buffer's). */
function length(b: Uint8Array, end: number, field: number): number {
  const at = pos;
  const n = varint(b, end);
  if (hi !== 0 || n > end - pos)
    malformed(`field ${field}'s length ${hi === 0 ? n : 'of 2^32 or more'} runs past the end of its message`, at);
  return n;
}

/** Where an embedded message that starts here (at its length prefix) ends. */
function messageEnd(b: Uint8Array, end: number, field: number): number {
  const n = length(b, end, field);
  return pos + n;
}

function string(b: Uint8Array, end: number, field: number): string {
  const n = length(b, end, field);
  const start = pos;
  pos += n;
  return n === 0 ? '' : utf8Slice.call(b, start, pos);
}

/**
 * Domains and descriptor keys are a config's few names, sent request after request: the last KEPT_NAMES
 * read (of at most KEPT_NAME_BYTES) are kept with their bytes, and a field of the same bytes gets the kept
 * string, internalized (intern.ts), so no string is decoded and the rule lookups keyed by it compare
 * pointers, not texts. Values (a client's address, a path) are too many to keep and go through string().
 */
const KEPT_NAMES = 16;
const KEPT_NAME_BYTES = 64;
const keptBytes: Uint8Array[] = [];
const keptNames: string[] = [];
let nextKept = 0;

function name(b: Uint8Array, end: number, field: number): string {
  const n = length(b, end, field);
  const start = pos;
  pos += n;
  if (n === 0) return '';
  if (n > KEPT_NAME_BYTES) return utf8Slice.call(b, start, pos);
  for (let k = 0; k < keptBytes.length; k++) {
    const kept = keptBytes[k]!;
    if (kept.length !== n) continue;
    let i = 0;
    while (i < n && kept[i] === b[start + i]) i++;
    if (i === n) return keptNames[k]!;
  }
  const text = internalized(utf8Slice.call(b, start, pos));
  const copy = new Uint8Array(n); // `b` is the call's own buffer
  copy.set(b.subarray(start, pos));
  keptBytes[nextKept] = copy;
  keptNames[nextKept] = text;
  nextKept = (nextKept + 1) % KEPT_NAMES;
  return text;
}

/**
 * Steps over a field the message does not know. Every message here numbers its fields 1..known, so a field
 * number in that range arriving here came with another wire type than its own: malformed, not unknown.
 */
function skip(b: Uint8Array, end: number, tag: number, at: number, known: number): void {
  const field = tag >>> 3;
  const wire = tag & 7;
  if (field >= 1 && field <= known) malformed(`field ${field} has wire type ${wire}, not its own`, at);
  if (wire === 0) varint(b, end);
  else if (wire === 2) {
    const n = length(b, end, field); // not `pos += length(...)`: that adds to pos as it was before the prefix
    pos += n;
  } else if (wire === 1 || wire === 5) {
    const n = wire === 1 ? 8 : 4;
    if (n > end - pos) malformed(`field ${field}'s ${n}-byte value runs past the end of its message`, at);
    pos += n;
  } else malformed(`field ${field} has wire type ${wire}, which proto3 does not use`, at);
}

/** Decodes a RateLimitRequest (protobuf bytes, without the 5-byte gRPC prefix) into the service's request. Throws BadRequest on malformed bytes or invalid values. */
export function decodeRateLimitRequest(bytes: Uint8Array): RlsRequest {
  message = REQUEST.name;
  pos = 0;
  invalid = undefined;
  const end = bytes.length;
  let domain = '';
  // Most requests carry one descriptor of one entry: the first is held apart and the array made to fit at the
  // end, since an array grown from [] by push gets room for 17 at once.
  let first: RequestDescriptor | undefined;
  let descriptors: RequestDescriptor[] | undefined;
  let count = 0;
  let hitsAddend = 0;
  while (pos < end) {
    const at = pos;
    const tag = varint(bytes, end);
    if (tag === DOMAIN_TAG)
      domain = name(bytes, end, 1); // a later occurrence of a scalar replaces an earlier one
    else if (tag === DESCRIPTORS.tag) {
      const d = descriptor(bytes, messageEnd(bytes, end, DESCRIPTORS.number), count++);
      if (first === undefined) first = d;
      else if (descriptors === undefined) descriptors = [first, d];
      else descriptors.push(d);
    } else if (tag === HITS_TAG)
      hitsAddend = varint(bytes, end); // uint32: the low 32 bits, as protobufjs reads it
    else skip(bytes, end, tag, at, REQUEST.known);
  }
  // fromWire ran after protobufjs had decoded everything: malformed bytes anywhere win over an invalid value.
  if (invalid !== undefined) throw new BadRequest(invalid);
  return { domain, descriptors: descriptors ?? (first === undefined ? [] : [first]), hitsAddend };
}

/**
 * grpc.health.v1.HealthCheckRequest {string service = 1}: the service name a health check asks about ('' is
 * the server as a whole). Malformed bytes throw BadRequest, as for a RateLimitRequest.
 */
export function decodeHealthCheckRequest(bytes: Uint8Array): string {
  message = 'HealthCheckRequest';
  pos = 0;
  const end = bytes.length;
  let service = '';
  while (pos < end) {
    const at = pos;
    const tag = varint(bytes, end);
    if (tag === 0x0a) service = string(bytes, end, 1);
    else skip(bytes, end, tag, at, 1);
  }
  return service;
}

/** RateLimitDescriptor, ending at `end`; `i` is its index, for fromWire's messages. */
function descriptor(b: Uint8Array, end: number, i: number): RequestDescriptor {
  let first: Entry | undefined; // as the request's descriptors: the array made to fit at the end
  let entries: Entry[] | undefined;
  let hasLimit = false;
  let requestsPerUnit = 0;
  let unit = 0;
  let hasHits = false;
  let hitsLo = 0;
  let hitsHi = 0;
  while (pos < end) {
    const at = pos;
    const tag = varint(b, end);
    if (tag === ENTRIES.tag) {
      const stop = messageEnd(b, end, ENTRIES.number);
      let key = '';
      let value = '';
      while (pos < stop) {
        const at = pos;
        const t = varint(b, stop);
        if (t === KEY.tag) key = name(b, stop, KEY.number);
        else if (t === VALUE.tag) value = string(b, stop, VALUE.number);
        else skip(b, stop, t, at, ENTRY.known);
      }
      const entry = { key, value };
      if (first === undefined) first = entry;
      else if (entries === undefined) entries = [first, entry];
      else entries.push(entry);
    } else if (tag === LIMIT.tag) {
      // RateLimitOverride. A second one replaces the first whole (protobufjs), so both fields start over.
      const stop = messageEnd(b, end, LIMIT.number);
      hasLimit = true;
      requestsPerUnit = 0;
      unit = 0;
      while (pos < stop) {
        const at = pos;
        const t = varint(b, stop);
        if (t === REQUESTS_PER_UNIT_TAG) requestsPerUnit = varint(b, stop);
        else if (t === UNIT_TAG)
          unit = varint(b, stop) | 0; // enums are int32
        else skip(b, stop, t, at, OVERRIDE.known);
      }
    } else if (tag === DESCRIPTOR_HITS.tag) {
      // google.protobuf.UInt64Value: present with no value means 0, which fromWire passes on as 0.
      const stop = messageEnd(b, end, DESCRIPTOR_HITS.number);
      hasHits = true;
      hitsLo = 0;
      hitsHi = 0;
      while (pos < stop) {
        const at = pos;
        const t = varint(b, stop);
        if (t === UINT64_TAG) {
          hitsLo = varint(b, stop);
          hitsHi = hi;
        } else skip(b, stop, t, at, UINT64_VALUE.known);
      }
    } else skip(b, end, tag, at, DESCRIPTOR.known);
  }
  let limit: RequestDescriptor['limit'];
  if (hasLimit) {
    const name = unit >= 1 && unit <= 6 ? UNIT_BY_NUMBER[unit] : undefined;
    // protobufjs names 0 UNKNOWN and leaves a number it has no name for as the number.
    if (name === undefined)
      invalid ??= `descriptors[${i}].limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${unit === 0 ? 'UNKNOWN' : unit}`;
    else limit = { requestsPerUnit, unit: name };
  }
  // Up to 2^53-1 is exact; past it, protobufjs's lo + hi * 2^32 rounds, and fromWire prints the rounded value.
  if (hasHits && hitsHi > 0x1fffff)
    invalid ??= `descriptors[${i}].hits_addend is too large: ${hitsLo + hitsHi * 4294967296}`;
  return {
    entries: entries ?? (first === undefined ? [] : [first]),
    limit,
    hitsAddend: hasHits ? hitsLo + hitsHi * 4294967296 : undefined,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Encoding, in two passes: the first adds up the size of every length-delimited part (innermost first, as
// each prefix needs its contents' size) into `sizes`, in the order the second pass writes them, so the answer
// is written front to back into one Buffer of the exact size.

/** Reused from answer to answer: after the first few answers, encoding allocates only the Buffer. */
const sizes: number[] = [];

function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

/** Size of a varint up to 2^53: Duration.seconds is an int64. */
function longVarintSize(v: number): number {
  let n = 1;
  for (; v >= 0x80; n++) v = Math.floor(v / 128);
  return n;
}

function writeVarint(buf: Uint8Array, p: number, v: number): number {
  for (; v >= 0x80; v >>>= 7) buf[p++] = (v & 0x7f) | 0x80;
  buf[p++] = v;
  return p;
}

function writeLongVarint(buf: Buffer, p: number, v: number): number {
  for (; v > 0xffffffff; v = Math.floor(v / 128)) buf[p++] = (v % 128) | 0x80;
  return writeVarint(buf, p, v);
}

/**
 * UTF-8 length, as Buffer and TextEncoder encode: a surrogate pair is 4 bytes, a lone surrogate becomes
 * U+FFFD (3 bytes). Counting in JS costs less than Buffer.byteLength's call into C++ for short texts.
 */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if ((c & 0xfc00) === 0xd800 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++; // two UTF-16 units, four bytes
      n += 2;
    } else n += 2;
  }
  return n;
}

function writeUtf8(buf: Uint8Array, p: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) buf[p++] = c;
    else if (c < 0x800) {
      buf[p++] = 0xc0 | (c >> 6);
      buf[p++] = 0x80 | (c & 0x3f);
    } else if ((c & 0xfc00) === 0xd800 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c & 0x3ff) << 10) + (s.charCodeAt(++i) & 0x3ff);
      buf[p++] = 0xf0 | (c >> 18);
      buf[p++] = 0x80 | ((c >> 12) & 0x3f);
      buf[p++] = 0x80 | ((c >> 6) & 0x3f);
      buf[p++] = 0x80 | (c & 0x3f);
    } else {
      if ((c & 0xf800) === 0xd800) c = 0xfffd; // a lone surrogate: U+FFFD, valid UTF-8 for Envoy's parser
      buf[p++] = 0xe0 | (c >> 12);
      buf[p++] = 0x80 | ((c >> 6) & 0x3f);
      buf[p++] = 0x80 | (c & 0x3f);
    }
  }
  return p;
}

/** Enum RateLimitResponse.RateLimit.Unit by name. */
const UNIT_NUMBER: Readonly<Record<UnitName | 'UNKNOWN', number>> = {
  UNKNOWN: 0,
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
  MONTH: 5,
  YEAR: 6,
  WEEK: 7,
};

/**
 * A limit's RateLimit message (current_limit's contents: requests_per_unit, unit, name), kept for the last
 * KEPT_LIMITS CurrentLimit objects by identity: the service makes one per rule and answers with it call after
 * call, so its name is measured and written once, not twice per answer. By identity rather than in a
 * WeakMap, since a limit override makes a new one per call.
 */
const KEPT_LIMITS = 8;
const keptLimits: (CurrentLimit | undefined)[] = Array.from({ length: KEPT_LIMITS }, () => undefined);
const keptLimitMessages: Uint8Array[] = Array.from({ length: KEPT_LIMITS }, () => new Uint8Array(0));
let nextLimit = 0;

function limitMessage(l: CurrentLimit): Uint8Array {
  for (let i = 0; i < KEPT_LIMITS; i++) if (keptLimits[i] === l) return keptLimitMessages[i]!;
  const rpu = l.requestsPerUnit >>> 0;
  const unit = UNIT_NUMBER[l.unit];
  const name = utf8Length(l.name);
  const bytes = new Uint8Array(
    (rpu === 0 ? 0 : 1 + varintSize(rpu)) + (unit === 0 ? 0 : 2) + (name === 0 ? 0 : fieldSize(name)),
  );
  let p = 0;
  if (rpu !== 0) {
    bytes[p++] = 0x08; // RateLimit 1: requests_per_unit
    p = writeVarint(bytes, p, rpu);
  }
  if (unit !== 0) {
    bytes[p++] = 0x10; // 2: unit
    bytes[p++] = unit;
  }
  if (name !== 0) {
    bytes[p++] = 0x1a; // 3: name
    writeUtf8(bytes, writeVarint(bytes, p, name), l.name);
  }
  keptLimits[nextLimit] = l;
  keptLimitMessages[nextLimit] = bytes;
  nextLimit = (nextLimit + 1) % KEPT_LIMITS;
  return bytes;
}

/** A length-delimited field's whole size: its tag byte, its length prefix and its contents. */
function fieldSize(contents: number): number {
  return 1 + varintSize(contents) + contents;
}

/**
 * Encodes the service's answer as a RateLimitResponse: protobuf bytes after `headroom` bytes left unwritten
 * at the front, where the caller puts the gRPC message prefix, so the answer is one allocation. As toWire:
 * requests_per_unit and limit_remaining are uint32 (taken `>>> 0`, as protobufjs's fromObject did), and
 * durationUntilResetMs, a whole non-negative number of milliseconds as the service gives it, becomes
 * {seconds: floor(ms / 1000), nanos: (ms % 1000) * 10^6}.
 *
 * With `envoy`, the answer is written as envoyproxy/ratelimit would have sent it at `nowMs` (envoy-wire.ts):
 * each status's code, limit_remaining and duration_until_reset, and the headers, are Envoy's, read from the
 * service's statuses as they are written rather than from a copy of the answer made for it.
 */
export function encodeRateLimitResponse(r: RlsResponse, headroom = 0, envoy?: EnvoyWire, nowMs = 0): Buffer {
  // Pass 1. Per status, `sizes` holds: its contents' size, its limit_remaining and its duration in ms (worked
  // out once: Envoy's reads the clock), then, with a duration, the Duration's size. Per header: its size, the
  // key's and the value's UTF-8 lengths.
  let k = 0;
  let total = 2; // overall_code, never 0: OK or OVER_LIMIT
  const statuses = r.statuses;
  const headers = envoy === undefined ? r.headers : envoyHeaders(statuses, envoy, nowMs);
  // Indexed loops: for-of with [key, value] destructuring goes through the iterator protocol per header.
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    const slot = k;
    const remaining = (envoy === undefined ? s.limitRemaining : envoyRemaining(s)) >>> 0;
    const ms = envoy === undefined ? s.durationUntilResetMs : envoyDurationMs(s, nowMs);
    sizes[k + 1] = remaining;
    sizes[k + 2] = ms;
    k += 3;
    let size = 2; // code
    const l = s.currentLimit;
    if (l !== undefined) size += fieldSize(limitMessage(l).length);
    if (remaining !== 0) size += 1 + varintSize(remaining);
    if (ms !== 0) {
      const seconds = Math.floor(ms / 1000);
      const nanos = ((ms % 1000) * 1_000_000) | 0;
      const duration = (seconds === 0 ? 0 : 1 + longVarintSize(seconds)) + (nanos === 0 ? 0 : 1 + varintSize(nanos));
      sizes[k++] = duration;
      size += fieldSize(duration);
    }
    sizes[slot] = size;
    total += fieldSize(size);
  }
  for (let i = 0; i < headers.length; i++) {
    const keyBytes = utf8Length(headers[i]![0]);
    const valueBytes = utf8Length(headers[i]![1]);
    const size = (keyBytes === 0 ? 0 : fieldSize(keyBytes)) + (valueBytes === 0 ? 0 : fieldSize(valueBytes));
    sizes[k++] = size;
    sizes[k++] = keyBytes;
    sizes[k++] = valueBytes;
    total += fieldSize(size);
  }

  // Pass 2, in the same order; every field in number order.
  const buf = Buffer.allocUnsafe(headroom + total);
  buf[headroom] = 0x08; // 1: overall_code
  buf[headroom + 1] = r.overallCode === 'OK' ? 1 : 2;
  let p = headroom + 2;
  k = 0;
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    buf[p++] = 0x12; // 2: statuses
    p = writeVarint(buf, p, sizes[k++]!);
    const remaining = sizes[k++]!;
    const ms = sizes[k++]!;
    buf[p++] = 0x08; // DescriptorStatus 1: code
    buf[p++] = (envoy === undefined ? s.code : envoyCode(s)) === 'OK' ? 1 : 2;
    const l = s.currentLimit;
    if (l !== undefined) {
      const limit = limitMessage(l);
      buf[p++] = 0x12; // 2: current_limit
      p = writeVarint(buf, p, limit.length);
      buf.set(limit, p);
      p += limit.length;
    }
    if (remaining !== 0) {
      buf[p++] = 0x18; // 3: limit_remaining
      p = writeVarint(buf, p, remaining);
    }
    if (ms !== 0) {
      buf[p++] = 0x22; // 4: duration_until_reset
      p = writeVarint(buf, p, sizes[k++]!);
      const seconds = Math.floor(ms / 1000);
      const nanos = ((ms % 1000) * 1_000_000) | 0;
      if (seconds !== 0) {
        buf[p++] = 0x08; // Duration 1: seconds
        p = writeLongVarint(buf, p, seconds);
      }
      if (nanos !== 0) {
        buf[p++] = 0x10; // 2: nanos
        p = writeVarint(buf, p, nanos);
      }
    }
  }
  for (let i = 0; i < headers.length; i++) {
    const key = headers[i]![0];
    const value = headers[i]![1];
    buf[p++] = 0x1a; // 3: response_headers_to_add
    p = writeVarint(buf, p, sizes[k++]!);
    const keyBytes = sizes[k++]!;
    const valueBytes = sizes[k++]!;
    if (keyBytes !== 0) {
      buf[p++] = 0x0a; // HeaderValue 1: key
      p = writeUtf8(buf, writeVarint(buf, p, keyBytes), key);
    }
    if (valueBytes !== 0) {
      buf[p++] = 0x12; // 2: value
      p = writeUtf8(buf, writeVarint(buf, p, valueBytes), value);
    }
  }
  return buf;
}
