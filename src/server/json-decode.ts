/**
 * Request decoding for the HTTP APIs, the general path: Envoy's RateLimitRequest in proto3 JSON for
 * POST /json (field names in either original or lowerCamel form, as protojson accepts them), after
 * JSON.parse, and sluice's own `/v1/check` shape. Every rejection names the field and says what was
 * expected. json-fast.ts reads the common /json bodies without JSON.parse; what it leaves comes here.
 */
import { UNITS } from './config.js';
import type { UnitName } from './config.js';
import { BadRequest, MAX_UINT32 } from './service.js';
import type { Entry } from './rules.js';
import type { RequestDescriptor, RlsRequest } from './service.js';

const UNIT_BY_NUMBER: (UnitName | undefined)[] = [undefined, 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'];

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

