/**
 * Answering on the HTTP side of `sluice serve`: a decision as /json (Envoy's JSON answer, its headers in the
 * body) or /v1/check (the RateLimit headers), an error as the status that names it, and the plain sends
 * they share. No routing, no decoding: each function is given the response and what to say.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BodyKind } from './http-body.js';
import { renderCheck, renderRlsJson, renderRlsJsonSized } from '../codecs/json-codec.js';
import { BadRequest, StoreUnavailable } from '../codecs/rls-types.js';
import type { RlsResponse } from '../codecs/rls-types.js';

export const JSON_HEADERS = { 'content-type': 'application/json' };
export const TEXT_HEADERS = { 'content-type': 'text/plain' };

/** Sends with Content-Length: without it Node frames the body as chunked, one more write per answer. */
export function send(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = JSON_HEADERS,
): void {
  res.setHeader('content-length', Buffer.byteLength(body));
  res.writeHead(status, headers);
  res.end(body);
}

export function problem(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = JSON_HEADERS,
): void {
  send(res, status, JSON.stringify({ error: message }), headers);
}

function withRateHeaders(r: RlsResponse): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  for (const [k, v] of r.headers) h[k] = v;
  return h;
}

/** A decision, as the route it came in on answers it. */
export function answerDecision(res: ServerResponse, kind: BodyKind, r: RlsResponse): void {
  const ok = r.overallCode === 'OK';
  // /json carries Envoy's headers in its body (responseHeadersToAdd), as envoyproxy/ratelimit's does; only a
  // 429 repeats Retry-After. Every extra header costs Node a validation pass on the hottest path.
  if (kind === 'json' && ok) {
    // The hottest answer: one literal header object straight into writeHead, Node's fast path, and the byte
    // length counted while rendering (Buffer.byteLength flattened the answer once more than Node's write).
    const { text, bytes } = renderRlsJsonSized(r);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes });
    // As many bytes as UTF-16 units: the answer is ASCII, and latin1 writes the same bytes by a plain copy
    // where UTF-8 encodes character by character (v8::String::WriteUtf8).
    if (bytes === text.length) res.end(text, 'latin1');
    else res.end(text);
  } else if (kind === 'json') {
    // No Retry-After for a request that can never pass (its reason says why): it would be a promise not kept.
    const headers: Record<string, string> =
      r.reason !== undefined
        ? { 'content-type': 'application/json' }
        : { 'content-type': 'application/json', 'retry-after': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) };
    send(res, 429, renderRlsJson(r), headers);
  } else send(res, ok ? 200 : 429, renderCheck(r), withRateHeaders(r));
}

/** What a failed decision answers: 400 for a request the service cannot decide, 503 for the store, else 500. */
export function answerError(res: ServerResponse, log: Logger, e: unknown): void {
  if (e instanceof BadRequest) {
    log.debug({ err: e.message }, 'bad request');
    return problem(res, 400, e.message);
  }
  if (e instanceof StoreUnavailable) {
    log.warn({ err: e.message }, 'store unavailable');
    return problem(res, 503, e.message);
  }
  log.error({ err: e }, 'unexpected error');
  problem(res, 500, 'internal error');
}
