/**
 * Request decoding and response rendering for the HTTP APIs: Envoy's proto3-JSON form for POST /json
 * (field names in either original or lowerCamel form, as protojson accepts them) and sluice's own
 * `/v1/check` shape. Every rejection names the field and says what was expected.
 */
import { UNITS } from './config.js';
import type { UnitName } from './config.js';
import { BadRequest } from './service.js';
import type { CurrentLimit, RequestDescriptor, RlsRequest, RlsResponse } from './service.js';
import { integerText, millisAsSeconds } from './number-text.js';
import { internalized } from './intern.js';
import type { Entry } from './rules.js';

const UNIT_BY_NUMBER: (UnitName | undefined)[] = [undefined, 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'];
const MAX_UINT32 = 4_294_967_295;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A field under either proto name: `hits_addend` or `hitsAddend`. */
function field(o: Record<string, unknown>, snake: string, camel: string): unknown {
  const a = o[snake];
  return a !== undefined ? a : o[camel];
}

function checkFields(o: Record<string, unknown>, where: string, known: readonly string[]): void {
  for (const k in o) if (!known.includes(k)) throw new BadRequest(`${where}unknown field '${k}'; known fields: ${known.join(', ')}`);
}

/** proto3 JSON integers may come as numbers or decimal strings. */
function uint(v: unknown, where: string, max: number): number {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new BadRequest(`'${where}' must be a whole number from 0 to ${max}, got ${JSON.stringify(v)}`);
  }
  return n;
}

function unit(v: unknown, where: string): UnitName {
  const u = typeof v === 'number' ? UNIT_BY_NUMBER[v] : typeof v === 'string' ? v.toUpperCase() : undefined;
  if (u === undefined || !Object.hasOwn(UNITS, u)) throw new BadRequest(`'${where}' must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${JSON.stringify(v)}`);
  return u as UnitName;
}

function str(v: unknown, where: string): string {
  if (typeof v !== 'string' || v === '') throw new BadRequest(`'${where}' must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

/** Decodes Envoy's RateLimitRequest in proto3 JSON. */
export function decodeRlsJson(body: unknown): RlsRequest {
  if (!isObject(body)) throw new BadRequest(`the body must be a JSON object such as {"domain": "...", "descriptors": [{"entries": [{"key": "...", "value": "..."}]}]}`);
  checkFields(body, '', ['domain', 'descriptors', 'hits_addend', 'hitsAddend']);
  const domain = body.domain;
  if (typeof domain !== 'string' || domain === '') throw new BadRequest(`'domain' must be a non-empty string, got ${JSON.stringify(domain)}`);
  const list = body.descriptors;
  if (list === undefined || (Array.isArray(list) && list.length === 0)) throw new BadRequest(`'descriptors' must not be empty`);
  if (!Array.isArray(list)) throw new BadRequest(`'descriptors' must be a list, got ${JSON.stringify(list)}`);
  const ha = field(body, 'hits_addend', 'hitsAddend');
  const hitsAddend = ha === undefined ? 0 : uint(ha, 'hits_addend', MAX_UINT32);
  const descriptors: RequestDescriptor[] = list.map((d: unknown, i: number) => {
    const where = `descriptors[${i}]`;
    if (!isObject(d)) throw new BadRequest(`'${where}' must be an object with 'entries', got ${JSON.stringify(d)}`);
    checkFields(d, `${where}: `, ['entries', 'limit', 'hits_addend', 'hitsAddend']);
    if (!Array.isArray(d.entries) || d.entries.length === 0) throw new BadRequest(`'${where}.entries' must be a non-empty list of {"key": "...", "value": "..."}`);
    const entries: Entry[] = d.entries.map((e: unknown, j: number) => {
      const w = `${where}.entries[${j}]`;
      if (!isObject(e)) throw new BadRequest(`'${w}' must be {"key": "...", "value": "..."}, got ${JSON.stringify(e)}`);
      checkFields(e, `${w}: `, ['key', 'value']);
      return { key: str(e.key, `${w}.key`), value: str(e.value, `${w}.value`) };
    });
    let limit: RequestDescriptor['limit'];
    if (d.limit !== undefined && d.limit !== null) {
      if (!isObject(d.limit)) throw new BadRequest(`'${where}.limit' must be {"requests_per_unit": n, "unit": "MINUTE"}`);
      checkFields(d.limit, `${where}.limit: `, ['requests_per_unit', 'requestsPerUnit', 'unit']);
      limit = { requestsPerUnit: uint(field(d.limit, 'requests_per_unit', 'requestsPerUnit') ?? 0, `${where}.limit.requests_per_unit`, MAX_UINT32), unit: unit(d.limit.unit, `${where}.limit.unit`) };
    }
    const dh = field(d, 'hits_addend', 'hitsAddend');
    return { entries, limit, hitsAddend: dh === undefined || dh === null ? undefined : uint(dh, `${where}.hits_addend`, Number.MAX_SAFE_INTEGER) };
  });
  return { domain, descriptors, hitsAddend };
}

/**
 * The common /json body straight from its text, without JSON.parse and decodeRlsJson: an object with
 * `domain`, `descriptors` (each with `entries` of `key`/`value`, and optionally a per-descriptor hits_addend)
 * and optionally `hits_addend`, fields in any order, JSON whitespace anywhere. Returns undefined on anything
 * else (an escape or a control character in a string, an empty string, a `limit` override, a duplicate or
 * unknown field, a hits value that is not plain digits, malformed JSON), and the caller then takes the general
 * path, which decodes or rejects exactly as before: what this accepts, it decodes to the same RlsRequest.
 * Why: JSON.parse plus decodeRlsJson cost about 0.79 µs of the ~2.5 µs sluice spent on a /json request
 * (in process, bench/serve's bodies), more than the decision; this costs ~0.21 µs on the compact form and
 * 0.40 µs on any other.
 */
export function decodeRlsJsonFast(text: string): RlsRequest | undefined {
  return decodeCompact(text) ?? scan(text);
}

/** A non-empty stretch text[from, to) without escapes or control characters: a JSON string's content as is. */
function plain(text: string, from: number, to: number): boolean {
  if (to <= from) return false;
  for (let j = from; j < to; j++) {
    const c = text.charCodeAt(j);
    if (c < 0x20 || c === BACKSLASH) return false;
  }
  return true;
}

/**
 * `text` holds `literal` at `i`. A slice compared with a constant: ~12 ns a fragment here, where
 * startsWith(literal, i) took ~20 ns.
 */
function at(text: string, i: number, literal: string): boolean {
  return text.slice(i, i + literal.length) === literal;
}

/**
 * The compact form JSON encoders write, in Envoy's field order and without hits_addend:
 * `{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"},...]},...]}`. Matching its fixed
 * fragments costs ~0.21 µs against ~0.40 µs for the general scan (in process, bench/serve's bodies).
 *
 * A client sends the same domain and first key on every request of a route, with other values: the text up
 * to the first value (its head, `{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"`) is kept
 * for the last few heads seen, with its domain and key interned (intern.ts). A body that starts with a kept
 * head is read from its first value on: one comparison instead of matching and cutting the head, and the
 * service then finds the domain and the rule by pointer. About 2.5 k instructions less per /json request
 * (callgrind, bench/serve's bodies: this function 1.42 k -> 0.72 k, substrings -0.65 k, string hashing
 * -0.41 k, string comparisons -0.6 k, indexOf -0.19 k); a body that starts otherwise is read as before,
 * plus one comparison per kept head, and interning its domain and key once it is kept.
 */
function decodeCompact(s: string): RlsRequest | undefined {
  let domain: string;
  let key: string;
  let i: number;
  const kept = keptHead(s);
  if (kept !== undefined) {
    domain = kept.domain;
    key = kept.key;
    i = kept.text.length;
  } else {
    if (!at(s, 0, '{"domain":"')) return undefined;
    i = 11;
    let q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, '","descriptors":[{"entries":[{"key":"')) return undefined;
    const d = s.slice(i, q);
    i = q + 37;
    q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, '","value":"')) return undefined;
    const k = s.slice(i, q);
    i = q + 11;
    const head = keepHead(s.slice(0, i), d, k);
    domain = head.domain;
    key = head.key;
  }
  // At an entry's value, its key read.
  const descriptors: RequestDescriptor[] = [];
  let entries: Entry[] = [];
  for (;;) {
    let q = s.indexOf('"', i);
    if (!plain(s, i, q) || s.charCodeAt(q + 1) !== RBRACE) return undefined;
    entries.push({ key, value: s.slice(i, q) });
    i = q + 2;
    if (s.charCodeAt(i) === COMMA) {
      // Another entry of this descriptor.
      if (!at(s, i, ',{"key":"')) return undefined;
      i += 9;
    } else {
      if (s.charCodeAt(i) !== RBRACKET || s.charCodeAt(i + 1) !== RBRACE) return undefined;
      i += 2;
      descriptors.push({ entries, limit: undefined, hitsAddend: undefined });
      if (s.charCodeAt(i) !== COMMA) break;
      // Another descriptor.
      if (!at(s, i, ',{"entries":[{"key":"')) return undefined;
      i += 21;
      entries = [];
    }
    q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, '","value":"')) return undefined;
    key = s.slice(i, q);
    i = q + 11;
  }
  if (i + 2 !== s.length || s.charCodeAt(i) !== RBRACKET || s.charCodeAt(i + 1) !== RBRACE) return undefined;
  return { domain, descriptors, hitsAddend: 0 };
}

/** A body's text up to its first value, and its domain and first key, interned. */
interface Head {
  readonly text: string;
  readonly domain: string;
  readonly key: string;
}

/** Heads kept: a few routes' shapes; more would cost every body that matches none a comparison each. */
const KEPT_HEADS = 4;
const heads: Head[] = [];
let nextHead = 0;

function keptHead(s: string): Head | undefined {
  for (let h = 0; h < heads.length; h++) {
    const head = heads[h]!;
    // A slice compared with the head, not startsWith: TurboFan inlines startsWith as a loop reading both
    // strings a character at a time through their representations (5.4 k instructions for an 80-character
    // head under callgrind, against ~0.8 k this way).
    if (at(s, 0, head.text)) return head;
  }
  return undefined;
}

/** Keeps a head in place of the oldest one. */
function keepHead(text: string, domain: string, key: string): Head {
  const head = { text: internalized(text), domain: internalized(domain), key: internalized(key) };
  heads[nextHead] = head;
  nextHead = (nextHead + 1) % KEPT_HEADS;
  return head;
}

/** Any order of the fields, any JSON whitespace, hits_addend in either spelling. */
function scan(text: string): RlsRequest | undefined {
  const p = new Scan(text);
  let domain: string | undefined;
  let descriptors: RequestDescriptor[] | undefined;
  let hitsAddend: number | undefined;
  if (!p.take(LBRACE)) return undefined;
  do {
    const name = p.string();
    if (name === undefined || !p.colon()) return undefined;
    if (name === 'domain' && domain === undefined) {
      if ((domain = p.string()) === undefined) return undefined;
    } else if (name === 'descriptors' && descriptors === undefined) {
      if ((descriptors = p.descriptors()) === undefined) return undefined;
    } else if ((name === 'hits_addend' || name === 'hitsAddend') && hitsAddend === undefined) {
      if ((hitsAddend = p.digits(MAX_UINT32)) === undefined) return undefined;
    } else return undefined;
  } while (p.comma());
  if (!p.take(RBRACE) || !p.end() || domain === undefined || descriptors === undefined) return undefined;
  return { domain, descriptors, hitsAddend: hitsAddend ?? 0 };
}

const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const QUOTE = 0x22;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;

/** A cursor over JSON text for decodeRlsJsonFast; every method answers undefined/false where it gives up. */
class Scan {
  private i = 0;
  constructor(private readonly s: string) {}

  private ws(): number {
    const s = this.s;
    let c = s.charCodeAt(this.i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = s.charCodeAt(++this.i);
    return c;
  }

  /** Steps over the character `c` (after whitespace), if it is next. */
  take(c: number): boolean {
    if (this.ws() !== c) return false;
    this.i++;
    return true;
  }
  colon(): boolean {
    return this.take(0x3a);
  }
  comma(): boolean {
    return this.take(COMMA);
  }
  /** Only whitespace is left. */
  end(): boolean {
    this.ws();
    return this.i === this.s.length;
  }

  /** A non-empty string without escapes or control characters. */
  string(): string | undefined {
    if (this.ws() !== QUOTE) return undefined;
    const s = this.s;
    const start = ++this.i;
    let q = start;
    for (let c = s.charCodeAt(q); c !== QUOTE; c = s.charCodeAt(++q)) {
      if (!(c >= 0x20) || c === BACKSLASH) return undefined; // NaN: the text ended inside the string
    }
    if (q === start) return undefined;
    this.i = q + 1;
    return s.slice(start, q);
  }

  /** A whole number written as plain digits (no sign, fraction, exponent or leading zero), at most `max`. */
  digits(max: number): number | undefined {
    const s = this.s;
    let c = this.ws();
    const start = this.i;
    let n = 0;
    while (c >= 0x30 && c <= 0x39) {
      n = n * 10 + (c - 0x30);
      c = s.charCodeAt(++this.i);
    }
    const len = this.i - start;
    if (len === 0 || len > 15 || (len > 1 && s.charCodeAt(start) === 0x30) || n > max) return undefined;
    if (c === 0x2e || c === 0x65 || c === 0x45) return undefined; // 1.0, 1e3: leave them to JSON.parse
    return n;
  }

  descriptors(): RequestDescriptor[] | undefined {
    if (!this.take(LBRACKET)) return undefined;
    const list: RequestDescriptor[] = [];
    do {
      if (!this.take(LBRACE)) return undefined;
      let entries: Entry[] | undefined;
      let hits: number | undefined;
      do {
        const name = this.string();
        if (name === undefined || !this.colon()) return undefined;
        if (name === 'entries' && entries === undefined) {
          if ((entries = this.entries()) === undefined) return undefined;
        } else if ((name === 'hits_addend' || name === 'hitsAddend') && hits === undefined) {
          if ((hits = this.digits(Number.MAX_SAFE_INTEGER)) === undefined) return undefined;
        } else return undefined;
      } while (this.comma());
      if (!this.take(RBRACE) || entries === undefined) return undefined;
      list.push({ entries, limit: undefined, hitsAddend: hits });
    } while (this.comma());
    return this.take(RBRACKET) ? list : undefined;
  }

  private entries(): Entry[] | undefined {
    if (!this.take(LBRACKET)) return undefined;
    const list: Entry[] = [];
    do {
      if (!this.take(LBRACE)) return undefined;
      let key: string | undefined;
      let value: string | undefined;
      do {
        const name = this.string();
        if (name === undefined || !this.colon()) return undefined;
        if (name === 'key' && key === undefined) {
          if ((key = this.string()) === undefined) return undefined;
        } else if (name === 'value' && value === undefined) {
          if ((value = this.string()) === undefined) return undefined;
        } else return undefined;
      } while (this.comma());
      if (!this.take(RBRACE) || key === undefined || value === undefined) return undefined;
      list.push({ key, value });
    } while (this.comma());
    return this.take(RBRACKET) ? list : undefined;
  }
}

/**
 * A status's opening with its limit, per code, and how many more UTF-8 bytes than UTF-16 units it holds (a
 * limit's name may be any text). A limit lives as long as its rule, and its text never changes.
 */
interface StatusOpening {
  readonly ok: string;
  readonly over: string;
  readonly extraBytes: number;
  /**
   * For the common answer (see renderCommon): its text up to the remaining count, and from the reset time's
   * `s"}` up to RateLimit-Remaining's value, with RateLimit-Limit's value `l.header` in it (undefined when
   * that value needs escaping), and how many more UTF-8 bytes than UTF-16 units the two hold.
   */
  readonly answerHead: string;
  readonly answerMiddle: string | undefined;
  readonly answerExtraBytes: number;
}

const openingsByLimit = new WeakMap<CurrentLimit, StatusOpening>();

function statusOpening(l: CurrentLimit): StatusOpening {
  let o = openingsByLimit.get(l);
  if (o === undefined) {
    let limit = `,"currentLimit":{`;
    if (l.name !== '') limit += `"name":${JSON.stringify(l.name)},`;
    if (l.requestsPerUnit !== 0) limit += `"requestsPerUnit":${l.requestsPerUnit},`;
    limit += `"unit":"${l.unit}"}`;
    const extraBytes = Buffer.byteLength(limit) - limit.length;
    const headerExtra = plainExtraBytes(l.header);
    o = {
      ok: `{"code":"OK"${limit}`,
      over: `{"code":"OVER_LIMIT"${limit}`,
      extraBytes,
      answerHead: `{"overallCode":"OK","statuses":[{"code":"OK"${limit},"limitRemaining":`,
      answerMiddle: headerExtra < 0 ? undefined : `s"}],"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"${l.header}"},{"key":"RateLimit-Remaining","value":"`,
      answerExtraBytes: extraBytes + headerExtra,
    };
    openingsByLimit.set(l, o);
  }
  return o;
}

/** `{"key":"<name>","value":"` for the headers the service sets, as literals: no concatenation per answer. */
function knownHeaderOpening(name: string): string | undefined {
  switch (name) {
    case 'RateLimit-Limit':
      return '{"key":"RateLimit-Limit","value":"';
    case 'RateLimit-Remaining':
      return '{"key":"RateLimit-Remaining","value":"';
    case 'RateLimit-Reset':
      return '{"key":"RateLimit-Reset","value":"';
    case 'Retry-After':
      return '{"key":"Retry-After","value":"';
    default:
      return undefined;
  }
}

/**
 * How many more UTF-8 bytes than UTF-16 units `v` takes when JSON.stringify(v) is v in quotes, as for every
 * RateLimit value; -1 when it is not (a quote, backslash, control character or surrogate to consider).
 * Scanning is cheaper than JSON.stringify (~80 ns), and counting here spares Buffer.byteLength of the answer.
 */
function plainExtraBytes(v: string): number {
  let extra = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x80) {
      if (c < 0x20 || c === 0x22 || c === 0x5c) return -1;
    } else if (c < 0x800) extra += 1;
    else if (c >= 0xd800 && c <= 0xdfff) return -1;
    else extra += 2;
  }
  return extra;
}

/** An answer's text and its length in UTF-8 bytes (its Content-Length). */
export interface RenderedJson {
  readonly text: string;
  readonly bytes: number;
}

/**
 * Renders RateLimitResponse as protojson does: lowerCamel names, enums as names, zero values left out.
 * Built as a string, not through JSON.stringify of an object tree: this runs on every /json request and the
 * object tree cost more than the decision itself (CPU profile of the /json path). The per-limit text is
 * cached and numbers go through number-text.ts: with both, rendering bench/serve's answers fell from
 * ~1.3 µs to ~0.5 µs in process (new remaining counts and reset times each time, as under load).
 * Constant fragments are whole literals (a status's opening with its limit, a header's `{"key":…,"value":"`),
 * so an answer takes about 20 string additions instead of 36, and the byte length is counted on the way
 * instead of by Buffer.byteLength, which flattened the answer once more before Node's write did: together
 * about 5 k instructions less per answer (callgrind, bench/serve's answers).
 */
export function renderRlsJsonSized(r: RlsResponse): RenderedJson {
  const common = renderCommon(r);
  if (common !== undefined) return common;
  let out = r.overallCode === 'OK' ? '{"overallCode":"OK","statuses":[' : '{"overallCode":"OVER_LIMIT","statuses":[';
  let extraBytes = 0;
  for (let i = 0; i < r.statuses.length; i++) {
    const s = r.statuses[i]!;
    if (i > 0) out += ',';
    if (s.currentLimit === undefined) out += s.code === 'OK' ? '{"code":"OK"' : '{"code":"OVER_LIMIT"';
    else {
      const o = statusOpening(s.currentLimit);
      out += s.code === 'OK' ? o.ok : o.over;
      extraBytes += o.extraBytes;
    }
    if (s.limitRemaining !== 0) out += ',"limitRemaining":' + integerText(s.limitRemaining);
    if (s.durationUntilResetMs !== 0) out += ',"durationUntilReset":"' + millisAsSeconds(s.durationUntilResetMs) + 's"}';
    else out += '}';
  }
  const headers = r.headers;
  if (headers.length > 0) {
    out += '],"responseHeadersToAdd":[';
    for (let i = 0; i < headers.length; i++) {
      const header = headers[i]!;
      const value = header[1];
      let opening = knownHeaderOpening(header[0]);
      if (opening === undefined) {
        opening = `{"key":"${header[0]}","value":"`;
        extraBytes += Buffer.byteLength(header[0]) - header[0].length;
      }
      if (i > 0) out += ',';
      const extra = plainExtraBytes(value);
      if (extra >= 0) {
        out += opening + value + '"}';
        extraBytes += extra;
      } else {
        const quoted = JSON.stringify(value);
        out += opening.slice(0, -1) + quoted + '}';
        extraBytes += Buffer.byteLength(quoted) - quoted.length;
      }
    }
  }
  out += ']}';
  return { text: out, bytes: out.length + extraBytes };
}

/**
 * The answer to nearly every /json request, OK on one descriptor with a limit (bench/serve's, and Envoy's on a
 * single-descriptor route), in 9 pieces where the general rendering adds about 25: the text between the
 * dynamic values is cached per limit (StatusOpening). Fewer pieces mean fewer string additions here and,
 * above all, a shallower rope for Node to flatten when it writes the answer (String::SlowFlatten under
 * WriteUtf8 cost 3.3 k instructions per answer, callgrind). About 2.1 k instructions less per answer
 * (callgrind, bench/serve: rendering 2.4 k -> 1.1 k, string additions -0.4 k, flattening -0.5 k).
 * Exactly the general rendering's text; undefined for any other shape.
 */
function renderCommon(r: RlsResponse): RenderedJson | undefined {
  const statuses = r.statuses;
  const headers = r.headers;
  if (r.overallCode !== 'OK' || statuses.length !== 1 || headers.length !== 3) return undefined;
  const s = statuses[0]!;
  const l = s.currentLimit;
  if (s.code !== 'OK' || l === undefined || s.limitRemaining === 0 || s.durationUntilResetMs === 0) return undefined;
  const limitHeader = headers[0]!;
  const remainingHeader = headers[1]!;
  const resetHeader = headers[2]!;
  if (limitHeader[0] !== 'RateLimit-Limit' || remainingHeader[0] !== 'RateLimit-Remaining' || resetHeader[0] !== 'RateLimit-Reset') return undefined;
  const o = statusOpening(l);
  if (o.answerMiddle === undefined || limitHeader[1] !== l.header) return undefined;
  const remainingExtra = plainExtraBytes(remainingHeader[1]);
  const resetExtra = plainExtraBytes(resetHeader[1]);
  if (remainingExtra < 0 || resetExtra < 0) return undefined;
  const text =
    o.answerHead +
    integerText(s.limitRemaining) +
    ',"durationUntilReset":"' +
    millisAsSeconds(s.durationUntilResetMs) +
    o.answerMiddle +
    remainingHeader[1] +
    '"},{"key":"RateLimit-Reset","value":"' +
    resetHeader[1] +
    '"}]}';
  return { text, bytes: text.length + o.answerExtraBytes + remainingExtra + resetExtra };
}

/** renderRlsJsonSized's text alone. */
export function renderRlsJson(r: RlsResponse): string {
  return renderRlsJsonSized(r).text;
}

/**
 * sluice's own shape: `{"domain": "api", "descriptors": [{"user": "42"}], "cost": 1}`, or for a rule on the
 * descriptor key `key`, `{"key": "user:42"}` (domain optional when only one is configured).
 */
export function decodeCheck(body: unknown, onlyDomain: string | undefined): RlsRequest {
  if (!isObject(body)) throw new BadRequest(`the body must be a JSON object such as {"key": "user:42", "cost": 1} or {"domain": "api", "descriptors": [{"user": "42"}]}`);
  checkFields(body, '', ['domain', 'key', 'descriptors', 'cost']);
  const cost = body.cost === undefined ? 1 : uint(body.cost, 'cost', Number.MAX_SAFE_INTEGER);
  let domain: string;
  if (body.domain !== undefined) domain = str(body.domain, 'domain');
  else if (onlyDomain !== undefined) domain = onlyDomain;
  else throw new BadRequest(`'domain' is required when several domains are configured`);
  if ((body.key === undefined) === (body.descriptors === undefined)) throw new BadRequest(`give exactly one of 'key' or 'descriptors'`);
  let descriptors: RequestDescriptor[];
  if (body.key !== undefined) descriptors = [{ entries: [{ key: 'key', value: str(body.key, 'key') }], hitsAddend: cost }];
  else {
    if (!Array.isArray(body.descriptors) || body.descriptors.length === 0) throw new BadRequest(`'descriptors' must be a non-empty list of objects such as {"user": "42"}`);
    descriptors = body.descriptors.map((d: unknown, i: number) => {
      if (!isObject(d) || Object.keys(d).length === 0) throw new BadRequest(`'descriptors[${i}]' must be a non-empty object such as {"user": "42"}`);
      return { entries: Object.entries(d).map(([k, v]) => ({ key: k, value: str(v, `descriptors[${i}].${k}`) })), hitsAddend: cost };
    });
  }
  return { domain, descriptors, hitsAddend: cost };
}

export function renderCheck(r: RlsResponse): string {
  return JSON.stringify({
    allowed: r.overallCode === 'OK',
    retryAfterMs: r.retryAfterMs,
    // Allowed: until the key's state is as if unused. Denied: until a retry of the same cost can pass.
    statuses: r.statuses.map((s) => ({
      rule: s.rule ?? null,
      allowed: s.code === 'OK',
      limit: s.currentLimit?.requestsPerUnit ?? null,
      remaining: s.limitRemaining,
      ...(s.code === 'OK' ? { resetAfterMs: s.durationUntilResetMs } : { retryAfterMs: s.durationUntilResetMs }),
      shadow: s.shadow,
    })),
  });
}
