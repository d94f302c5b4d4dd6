/**
 * The common /json bodies decoded straight from their text, without JSON.parse: the compact form JSON
 * encoders write (with the heads of recent bodies kept and interned), then any field order and whitespace.
 * Anything else is left to the general decoder (json-decode.ts), which decodes or rejects it.
 */
import { internalized } from './intern.js';
import { DESCRIPTOR, ENTRY, REQUEST } from './rls-request.js';
import type { Entry } from './rls-types.js';
import { MAX_UINT32 } from './rls-types.js';
import type { RequestDescriptor, RlsRequest } from './rls-types.js';

const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const QUOTE = 0x22;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;

// Field names from the request's one description (rls-request.ts), and the compact form's fixed fragments.
const DOMAIN = REQUEST.f.domain.name;
const DESCRIPTORS = REQUEST.f.descriptors.name;
const HITS = REQUEST.f.hitsAddend;
const ENTRIES = DESCRIPTOR.f.entries.name;
const DESCRIPTOR_HITS = DESCRIPTOR.f.hitsAddend;
const KEY = ENTRY.f.key.name;
const VALUE = ENTRY.f.value.name;
/** `{"domain":"` */
const OPEN = `{"${DOMAIN}":"`;
/** `","descriptors":[{"entries":[{"key":"` */
const TO_FIRST_KEY = `","${DESCRIPTORS}":[{"${ENTRIES}":[{"${KEY}":"`;
/** `","value":"` */
const TO_VALUE = `","${VALUE}":"`;
/** `,{"key":"`: another entry */
const NEXT_ENTRY = `,{"${KEY}":"`;
/** `,{"entries":[{"key":"`: another descriptor */
const NEXT_DESCRIPTOR = `,{"${ENTRIES}":[{"${KEY}":"`;

/**
 * The common /json body straight from its text, without JSON.parse and decodeRlsJson: an object with
 * `domain`, `descriptors` (each with `entries` of `key`/`value`, and optionally a per-descriptor hits_addend)
 * and optionally `hits_addend`, fields in any order, JSON whitespace anywhere. Returns undefined on anything
 * else (an escape or a control character in a string, an empty string, a `limit` override, a duplicate or
 * unknown field, a hits value that is not plain digits, malformed JSON), and the caller then takes the general
 * path, which decodes or rejects exactly as before: what this accepts, it decodes to the same RlsRequest.
 * Why: JSON.parse plus decodeRlsJson cost more than the decision itself; this costs a fraction of that.
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
 * `text` holds `literal` at `i`. A slice compared with a constant is cheaper than startsWith(literal, i).
 */
function at(text: string, i: number, literal: string): boolean {
  return text.slice(i, i + literal.length) === literal;
}

/**
 * The compact form JSON encoders write, in Envoy's field order and without hits_addend:
 * `{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"},...]},...]}`. Matching its fixed
 * fragments costs about half what the general scan does.
 *
 * A client sends the same domain and first key on every request of a route, with other values: the text up
 * to the first value (its head, `{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"`) is kept
 * for the last few heads seen, with its domain and key interned (intern.ts). A body that starts with a kept
 * head is read from its first value on: one comparison instead of matching and cutting the head, and the
 * service then finds the domain and the rule by pointer, with no substrings cut, hashed or compared; a body
 * that starts otherwise is read as before, plus one comparison per kept head, and interning its domain and
 * key once it is kept.
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
    if (!at(s, 0, OPEN)) return undefined;
    i = OPEN.length;
    let q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, TO_FIRST_KEY)) return undefined;
    const d = s.slice(i, q);
    i = q + TO_FIRST_KEY.length;
    q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, TO_VALUE)) return undefined;
    const k = s.slice(i, q);
    i = q + TO_VALUE.length;
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
      if (!at(s, i, NEXT_ENTRY)) return undefined;
      i += NEXT_ENTRY.length;
    } else {
      if (s.charCodeAt(i) !== RBRACKET || s.charCodeAt(i + 1) !== RBRACE) return undefined;
      i += 2;
      descriptors.push({ entries, limit: undefined, hitsAddend: undefined });
      if (s.charCodeAt(i) !== COMMA) break;
      // Another descriptor.
      if (!at(s, i, NEXT_DESCRIPTOR)) return undefined;
      i += NEXT_DESCRIPTOR.length;
      entries = [];
    }
    q = s.indexOf('"', i);
    if (!plain(s, i, q) || !at(s, q, TO_VALUE)) return undefined;
    key = s.slice(i, q);
    i = q + TO_VALUE.length;
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
    // strings a character at a time through their representations, several times the cost of this.
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
    if (name === DOMAIN && domain === undefined) {
      if ((domain = p.string()) === undefined) return undefined;
    } else if (name === DESCRIPTORS && descriptors === undefined) {
      if ((descriptors = p.descriptors()) === undefined) return undefined;
    } else if ((name === HITS.name || name === HITS.json) && hitsAddend === undefined) {
      if ((hitsAddend = p.digits(MAX_UINT32)) === undefined) return undefined;
    } else return undefined;
  } while (p.comma());
  if (!p.take(RBRACE) || !p.end() || domain === undefined || descriptors === undefined) return undefined;
  return { domain, descriptors, hitsAddend: hitsAddend ?? 0 };
}

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
        if (name === ENTRIES && entries === undefined) {
          if ((entries = this.entries()) === undefined) return undefined;
        } else if ((name === DESCRIPTOR_HITS.name || name === DESCRIPTOR_HITS.json) && hits === undefined) {
          if ((hits = this.digits(MAX_UINT32)) === undefined) return undefined;
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
        if (name === KEY && key === undefined) {
          if ((key = this.string()) === undefined) return undefined;
        } else if (name === VALUE && value === undefined) {
          if ((value = this.string()) === undefined) return undefined;
        } else return undefined;
      } while (this.comma());
      if (!this.take(RBRACE) || key === undefined || value === undefined) return undefined;
      list.push({ key, value });
    } while (this.comma());
    return this.take(RBRACKET) ? list : undefined;
  }
}
