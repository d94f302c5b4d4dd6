/**
 * Reads what an upstream says about its limits: Retry-After (RFC 9110 §10.2.3: delta seconds or an
 * HTTP date), GitHub's X-RateLimit-Remaining/-Reset (reset in epoch seconds), and the IETF RateLimit
 * fields of draft-ietf-httpapi-ratelimit-headers: draft-6 (RateLimit-Remaining/-Reset, delta seconds),
 * draft-7 (`RateLimit: limit=10, remaining=9, reset=42`) and draft-8 and later (`RateLimit: "name";r=9;t=42`).
 * A parser only: rendering these headers for sluice's own responses belongs to the HTTP layer.
 */

/** The upstream's own view of the budget a response was charged to. */
export interface UpstreamView {
  /** Calls (quota units) it says are left. */
  remaining: number;
  /** Until its budget resets, when it says. */
  resetAfterMs: number | undefined;
}

const SECONDS = /^\s*(\d+)\s*$/;

/** Retry-After in milliseconds, or undefined when absent or unreadable. A past date is 0. */
export function parseRetryAfter(value: string | null, nowMs: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const s = SECONDS.exec(value);
  if (s !== null) return Number(s[1]) * 1000;
  // Every HTTP-date form names its month; Date.parse alone would read '-5' as the year 5 BC.
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * The most restrictive budget the response reports, trying the IETF fields first, then GitHub's. For a
 * list of draft-8 policies it is the one with the fewest calls left.
 */
export function parseRateLimit(headers: Headers, nowMs: number = Date.now()): UpstreamView | undefined {
  const field = headers.get('ratelimit');
  if (field !== null) {
    const view = /\bremaining\s*=/i.test(field) ? parseDraft7(field) : parseDraft8(field);
    if (view !== undefined) return view;
  }
  const remaining6 = integer(headers.get('ratelimit-remaining'));
  if (remaining6 !== undefined)
    return { remaining: remaining6, resetAfterMs: seconds(integer(headers.get('ratelimit-reset'))) };
  const remaining = integer(headers.get('x-ratelimit-remaining'));
  if (remaining !== undefined) {
    const reset = integer(headers.get('x-ratelimit-reset'));
    // GitHub sends epoch seconds. Some APIs reuse the name for delta seconds; no epoch is below 1e9 (2001).
    const resetAfterMs =
      reset === undefined ? undefined : reset >= 1e9 ? Math.max(0, reset * 1000 - nowMs) : reset * 1000;
    return { remaining, resetAfterMs };
  }
  return undefined;
}

function integer(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const m = SECONDS.exec(value);
  return m === null ? undefined : Number(m[1]);
}

function seconds(s: number | undefined): number | undefined {
  return s === undefined ? undefined : s * 1000;
}

/** draft-7: a structured dictionary `limit=10, remaining=9, reset=42`. */
function parseDraft7(field: string): UpstreamView | undefined {
  let remaining: number | undefined;
  let reset: number | undefined;
  for (const member of field.split(',')) {
    const [name, value] = member.split('=').map((x) => x.trim().toLowerCase());
    if (name === 'remaining') remaining = integer(value);
    else if (name === 'reset') reset = integer(value);
  }
  return remaining === undefined ? undefined : { remaining, resetAfterMs: seconds(reset) };
}

/** draft-8+: a structured list of `"policy";r=<remaining>;t=<reset seconds>` items. */
function parseDraft8(field: string): UpstreamView | undefined {
  let best: UpstreamView | undefined;
  for (const item of splitList(field)) {
    let remaining: number | undefined;
    let reset: number | undefined;
    const params = item.split(';').slice(1);
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const name = p.slice(0, eq).trim();
      const value = p.slice(eq + 1).trim();
      if (name === 'r') remaining = integer(value);
      else if (name === 't') reset = integer(value);
    }
    if (remaining === undefined) continue;
    if (best === undefined || remaining < best.remaining) best = { remaining, resetAfterMs: seconds(reset) };
  }
  return best;
}

/** Splits a structured-field list on commas outside quoted strings (policy names are quoted strings). */
function splitList(field: string): string[] {
  const out: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < field.length; i++) {
    const c = field[i];
    if (c === '"' && field[i - 1] !== '\\') quoted = !quoted;
    else if (c === ',' && !quoted) {
      out.push(field.slice(start, i));
      start = i + 1;
    }
  }
  out.push(field.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}
