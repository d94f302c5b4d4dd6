/**
 * Answers of the HTTP APIs as text: Envoy's RateLimitResponse in proto3 JSON for POST /json, with its UTF-8
 * byte length counted while rendering, and sluice's own `/v1/check` decision.
 */
import { integerText, millisAsSeconds } from './number-text.js';
import { Answer, resetSeconds } from './rls-types.js';
import type { CurrentLimit, RlsResponse } from './rls-types.js';

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
/** The last limit looked up and its opening: most answers in a row are the same rule's, and a WeakMap lookup costs a hash probe. */
let lastLimit: CurrentLimit | undefined;
let lastOpening: StatusOpening | undefined;

function statusOpening(l: CurrentLimit): StatusOpening {
  if (l === lastLimit) return lastOpening!;
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
      answerMiddle:
        headerExtra < 0
          ? undefined
          : `s"}],"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"${l.header}"},{"key":"RateLimit-Remaining","value":"`,
      answerExtraBytes: extraBytes + headerExtra,
    };
    openingsByLimit.set(l, o);
  }
  lastLimit = l;
  lastOpening = o;
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
 * Scanning is cheaper than JSON.stringify, and counting here spares Buffer.byteLength of the answer.
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
 * object tree cost more than the decision itself. The per-limit text is cached and numbers go through
 * number-text.ts. Constant fragments are whole literals (a status's opening with its limit, a header's
 * `{"key":…,"value":"`), so an answer takes fewer string additions, and the byte length is counted on the
 * way instead of by Buffer.byteLength, which would flatten the answer once more before Node's write does.
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
    if (s.durationUntilResetMs !== 0) out += ',"durationUntilReset":"' + millisAsSeconds(s.durationUntilResetMs) + 's"';
    // Beyond Envoy's DescriptorStatus, and only where no rule matched: an OK that no limit decided.
    if (s.rule === undefined) out += ',"matched":false';
    // Beyond Envoy's DescriptorStatus, on a status that can never pass or that the store decided: sluice says why.
    if (s.reason !== undefined) out += ',"reason":"' + s.reason + '"';
    out += '}';
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
 * above all, a shallower rope for Node to flatten when it writes the answer (flattening under WriteUtf8
 * is a large share of writing an answer).
 * The service's own Answer is rendered from its tightest status, without building its headers: their
 * values are that status's remaining count and reset, whose digits need no escaping. Exactly the general
 * rendering's text; undefined for any other shape.
 */
function renderCommon(r: RlsResponse): RenderedJson | undefined {
  const statuses = r.statuses;
  if (r.overallCode !== 'OK' || statuses.length !== 1) return undefined;
  const s = statuses[0]!;
  const l = s.currentLimit;
  if (
    s.code !== 'OK' ||
    l === undefined ||
    s.limitRemaining === 0 ||
    s.durationUntilResetMs === 0 ||
    s.reason !== undefined
  )
    return undefined;
  const o = statusOpening(l);
  if (o.answerMiddle === undefined) return undefined;
  const limitRemaining = integerText(s.limitRemaining);
  let remaining: string;
  let reset: string;
  let extraBytes = o.answerExtraBytes;
  if (r instanceof Answer && r.tightest === s) {
    remaining = limitRemaining;
    reset = resetSeconds(s);
  } else {
    const headers = r.headers;
    if (headers.length !== 3) return undefined;
    const limitHeader = headers[0]!;
    const remainingHeader = headers[1]!;
    const resetHeader = headers[2]!;
    if (
      limitHeader[0] !== 'RateLimit-Limit' ||
      remainingHeader[0] !== 'RateLimit-Remaining' ||
      resetHeader[0] !== 'RateLimit-Reset' ||
      limitHeader[1] !== l.header
    )
      return undefined;
    remaining = remainingHeader[1];
    reset = resetHeader[1];
    const remainingExtra = plainExtraBytes(remaining);
    const resetExtra = plainExtraBytes(reset);
    if (remainingExtra < 0 || resetExtra < 0) return undefined;
    extraBytes += remainingExtra + resetExtra;
  }
  const text =
    o.answerHead +
    limitRemaining +
    ',"durationUntilReset":"' +
    millisAsSeconds(s.durationUntilResetMs) +
    o.answerMiddle +
    remaining +
    '"},{"key":"RateLimit-Reset","value":"' +
    reset +
    '"}]}';
  return { text, bytes: text.length + extraBytes };
}

/** renderRlsJsonSized's text alone. */
export function renderRlsJson(r: RlsResponse): string {
  return renderRlsJsonSized(r).text;
}

export function renderCheck(r: RlsResponse): string {
  return JSON.stringify({
    allowed: r.overallCode === 'OK',
    // Whether any descriptor matched a rule: an allowed answer with `matched: false` was decided by no limit.
    matched: r.statuses.some((s) => s.rule !== undefined),
    retryAfterMs: r.retryAfterMs,
    ...(r.reason !== undefined ? { reason: r.reason } : r.storeReason !== undefined ? { reason: r.storeReason } : {}),
    // Allowed: until the key's state is as if unused. Denied: until a retry of the same cost can pass.
    statuses: r.statuses.map((s) =>
      s.rule === undefined
        ? // No rule matched: no limit and nothing remaining to report (a 0 would read as "limit hit").
          { rule: null, matched: false, allowed: s.code === 'OK', shadow: s.shadow }
        : {
            rule: s.rule,
            matched: true,
            allowed: s.code === 'OK',
            limit: s.currentLimit?.requestsPerUnit ?? null,
            remaining: s.limitRemaining,
            ...(s.code === 'OK' ? { resetAfterMs: s.durationUntilResetMs } : { retryAfterMs: s.durationUntilResetMs }),
            shadow: s.shadow,
            ...(s.reason !== undefined ? { reason: s.reason } : {}),
          },
    ),
  });
}
