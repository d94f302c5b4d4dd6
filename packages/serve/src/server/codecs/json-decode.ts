/**
 * Request decoding for the HTTP APIs, the general path: Envoy's RateLimitRequest in proto3 JSON for
 * POST /json (field names in either original or lowerCamel form, as protojson accepts them), after
 * JSON.parse, and sluice's own `/v1/check` shape. Every rejection names the field and says what was
 * expected. json-fast.ts reads the common /json bodies without JSON.parse; what it leaves comes here.
 * Field names come from the request's one description (rls-request.ts). A body is measured for depth
 * before JSON.parse sees it (checkJsonDepth), and a value quoted in a message is cut short (shown), so
 * nothing recursive on this path meets a body deeper than the request itself nests.
 */
import { UNITS } from './rls-types.js';
import type { UnitName } from './rls-types.js';
import {
  checkDescriptorCount,
  checkEntryCount,
  DESCRIPTOR,
  ENTRY,
  jsonField,
  jsonNames,
  OVERRIDE,
  REQUEST,
} from './rls-request.js';
import { BadRequest, MAX_UINT32 } from './rls-types.js';
import type { Entry } from './rls-types.js';
import type { RequestDescriptor, RlsRequest } from './rls-types.js';

/** Longest quote of a client's value in a message. */
const SHOWN_CHARS = 60;

/** A client's value for a message: JSON, cut to SHOWN_CHARS (a parsed body is at most maxJsonDepth deep). */
export function shown(v: unknown): string {
  const text = v === undefined ? 'undefined' : JSON.stringify(v);
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}... (${text.length} characters)`;
}

/** A client's name for a message, cut to SHOWN_CHARS. */
function cut(name: string): string {
  return name.length <= SHOWN_CHARS ? name : `${name.slice(0, SHOWN_CHARS)}...`;
}

/**
 * Throws BadRequest when JSON text nests objects and lists deeper than `max`, counted without recursion
 * (strings skipped, escapes included). Malformed text is left to JSON.parse to name; this only measures.
 */
export function checkJsonDepth(text: string, max: number): void {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: to its closing quote, stepping over escapes
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max)
        throw new BadRequest(
          `the body nests objects and lists deeper than ${max} levels (at character ${i}); a request nests at most ${max}`,
        );
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}

const UNIT_BY_NUMBER: (UnitName | undefined)[] = [undefined, 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const REQUEST_FIELDS = jsonNames(REQUEST);
const DESCRIPTOR_FIELDS = jsonNames(DESCRIPTOR);
const ENTRY_FIELDS = jsonNames(ENTRY);
const OVERRIDE_FIELDS = jsonNames(OVERRIDE);
const R = REQUEST.f;
const D = DESCRIPTOR.f;
const E = ENTRY.f;
const O = OVERRIDE.f;

function checkFields(o: Record<string, unknown>, where: string, known: readonly string[]): void {
  for (const k in o)
    if (!known.includes(k))
      throw new BadRequest(`${where}unknown field '${cut(k)}'; known fields: ${known.join(', ')}`);
}

/** proto3 JSON integers may come as numbers or decimal strings. */
function uint(v: unknown, where: string, max: number): number {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new BadRequest(`'${where}' must be a whole number from 0 to ${max}, got ${shown(v)}`);
  }
  return n;
}

function unit(v: unknown, where: string): UnitName {
  const u = typeof v === 'number' ? UNIT_BY_NUMBER[v] : typeof v === 'string' ? v.toUpperCase() : undefined;
  if (u === undefined || !Object.hasOwn(UNITS, u))
    throw new BadRequest(`'${where}' must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR, got ${shown(v)}`);
  return u as UnitName;
}

function str(v: unknown, where: string): string {
  if (typeof v !== 'string' || v === '') throw new BadRequest(`'${where}' must be a non-empty string, got ${shown(v)}`);
  return v;
}

/** Decodes Envoy's RateLimitRequest in proto3 JSON. */
export function decodeRlsJson(body: unknown): RlsRequest {
  if (!isObject(body))
    throw new BadRequest(
      `the body must be a JSON object such as {"domain": "...", "descriptors": [{"entries": [{"key": "...", "value": "..."}]}]}`,
    );
  checkFields(body, '', REQUEST_FIELDS);
  const domain = jsonField(body, R.domain);
  if (typeof domain !== 'string' || domain === '')
    throw new BadRequest(`'domain' must be a non-empty string, got ${shown(domain)}`);
  const list = jsonField(body, R.descriptors);
  if (list === undefined || (Array.isArray(list) && list.length === 0))
    throw new BadRequest(`'descriptors' must not be empty`);
  if (!Array.isArray(list)) throw new BadRequest(`'descriptors' must be a list, got ${shown(list)}`);
  checkDescriptorCount(list.length);
  const ha = jsonField(body, R.hitsAddend);
  const hitsAddend = ha === undefined ? 0 : uint(ha, 'hits_addend', MAX_UINT32);
  const descriptors: RequestDescriptor[] = list.map((d: unknown, i: number) => {
    const where = `descriptors[${i}]`;
    if (!isObject(d)) throw new BadRequest(`'${where}' must be an object with 'entries', got ${shown(d)}`);
    checkFields(d, `${where}: `, DESCRIPTOR_FIELDS);
    const list = jsonField(d, D.entries);
    if (!Array.isArray(list) || list.length === 0)
      throw new BadRequest(`'${where}.entries' must be a non-empty list of {"key": "...", "value": "..."}`);
    checkEntryCount(list.length, i);
    const entries: Entry[] = list.map((e: unknown, j: number) => {
      const w = `${where}.entries[${j}]`;
      if (!isObject(e)) throw new BadRequest(`'${w}' must be {"key": "...", "value": "..."}, got ${shown(e)}`);
      checkFields(e, `${w}: `, ENTRY_FIELDS);
      return { key: str(jsonField(e, E.key), `${w}.key`), value: str(jsonField(e, E.value), `${w}.value`) };
    });
    let limit: RequestDescriptor['limit'];
    const l = jsonField(d, D.limit);
    if (l !== undefined && l !== null) {
      if (!isObject(l)) throw new BadRequest(`'${where}.limit' must be {"requests_per_unit": n, "unit": "MINUTE"}`);
      checkFields(l, `${where}.limit: `, OVERRIDE_FIELDS);
      limit = {
        requestsPerUnit: uint(jsonField(l, O.requestsPerUnit) ?? 0, `${where}.limit.requests_per_unit`, MAX_UINT32),
        unit: unit(jsonField(l, O.unit), `${where}.limit.unit`),
      };
    }
    const dh = jsonField(d, D.hitsAddend);
    return {
      entries,
      limit,
      hitsAddend: dh === undefined || dh === null ? undefined : uint(dh, `${where}.hits_addend`, MAX_UINT32),
    };
  });
  return { domain, descriptors, hitsAddend };
}

/**
 * sluice's own shape: `{"domain": "api", "descriptors": [{"user": "42"}], "cost": 1}`, or for a rule on the
 * descriptor key `key`, `{"key": "user:42"}` (domain optional when only one is configured).
 */
export function decodeCheck(body: unknown, onlyDomain: string | undefined): RlsRequest {
  if (!isObject(body))
    throw new BadRequest(
      `the body must be a JSON object such as {"key": "user:42", "cost": 1} or {"domain": "api", "descriptors": [{"user": "42"}]}`,
    );
  checkFields(body, '', ['domain', 'key', 'descriptors', 'cost']);
  const cost = body.cost === undefined ? 1 : uint(body.cost, 'cost', MAX_UINT32);
  let domain: string;
  if (body.domain !== undefined) domain = str(body.domain, 'domain');
  else if (onlyDomain !== undefined) domain = onlyDomain;
  else throw new BadRequest(`'domain' is required when several domains are configured`);
  if ((body.key === undefined) === (body.descriptors === undefined))
    throw new BadRequest(`give exactly one of 'key' or 'descriptors'`);
  let descriptors: RequestDescriptor[];
  if (body.key !== undefined)
    descriptors = [{ entries: [{ key: 'key', value: str(body.key, 'key') }], hitsAddend: cost }];
  else {
    if (!Array.isArray(body.descriptors) || body.descriptors.length === 0)
      throw new BadRequest(`'descriptors' must be a non-empty list of objects such as {"user": "42"}`);
    checkDescriptorCount(body.descriptors.length);
    descriptors = body.descriptors.map((d: unknown, i: number) => {
      if (!isObject(d) || Object.keys(d).length === 0)
        throw new BadRequest(`'descriptors[${i}]' must be a non-empty object such as {"user": "42"}`);
      const pairs = Object.entries(d);
      checkEntryCount(pairs.length, i, '');
      return {
        entries: pairs.map(([k, v]) => ({ key: k, value: str(v, `descriptors[${i}].${cut(k)}`) })),
        hitsAddend: cost,
      };
    });
  }
  return { domain, descriptors, hitsAddend: cost };
}
