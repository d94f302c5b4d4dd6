/**
 * The HTTP side of `sluice serve` on bare node:http (a framework would cost more than a decision):
 * POST /json and /v1/check, GET /nginx/<domain> for auth_request, /healthz, /readyz, /metrics, and the
 * dashboard (/, /events, /config).
 */
import { createServer, IncomingMessage } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { Dashboard } from './dashboard.js';
import { checkJsonDepth, decodeCheck, decodeRlsJson, decodeRlsJsonFast, renderCheck, renderRlsJson, renderRlsJsonSized } from './json-codec.js';
import { REQUEST_BOUNDS } from './rls-request.js';
import { BadRequest, StoreUnavailable } from './service.js';
import type { RateLimitService, RequestDescriptor, RlsRequest, RlsResponse } from './service.js';

export interface HttpDeps {
  readonly service: RateLimitService;
  readonly metrics: Registry;
  readonly dashboard: Dashboard;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  readonly ready: () => Promise<boolean>;
  /** True once shutdown began: /healthz and /readyz then answer 503 so load balancers drain us. */
  readonly stopping: () => boolean;
  /** Connection limits; Node's own defaults (60 s for headers, 300 s for a request, no cap) when absent. */
  readonly limits?: HttpLimits;
}

/** What a slow or greedy client may hold: see --headers-timeout-ms and its siblings in settings.ts. */
export interface HttpLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxConnections: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

type BodyKind = 'json' | 'check';
/** Where a body's text goes: `undefined` once the body is too large (drained, so 413 can still be sent). */
type BodyDone = (res: ServerResponse, kind: BodyKind, text: string | undefined) => void;

/**
 * Reads a body of at most `max` bytes and calls back with its text, or with `undefined` once it is too
 * large (then the rest is dropped as it arrives, so the connection can still answer 413). Callbacks, not
 * a Promise: this is the hottest path of /json, and an async chain cost measurably more than the decision.
 */
function readBody(req: ServeRequest, res: ServerResponse, kind: BodyKind, max: number, done: BodyDone): void {
  if (Number(req.headers['content-length']) > max) {
    req.resume();
    return done(res, kind, undefined);
  }
  req.bodyReader = new BodyReader(res, kind, max, done);
}

/**
 * A request that can hand its body straight to a reader. node:http's parser gives each body chunk to the
 * request's `push()` (the Readable implementer's method) and ends the body with `push(null)`, within the
 * same pass over the socket's bytes that emitted 'request'. Through 'data' events, each chunk is first
 * buffered in the stream (until its first read, a stream takes pushes as synchronous), flowed a tick later
 * by `resume()`, and then emitted; taken here in `push()`, the body costs nothing beyond its bytes, and
 * /json is decided in the parser's pass. A subclass (http.createServer's
 * `IncomingMessage` option) keeps every request one shape: an own `push` per request made Node's stream
 * code megamorphic and cost more than it saved. Once the body is read, its stream is ended there and then,
 * so node:http has nothing to dump when the answer finishes.
 * A request without a reader behaves as any other.
 */
export class ServeRequest extends IncomingMessage {
  bodyReader: BodySink | undefined = undefined;

  // `any` is Readable.push's own signature.
  override push(chunk: any, encoding?: BufferEncoding): boolean {
    const reader = this.bodyReader;
    if (reader === undefined) return super.push(chunk, encoding);
    if (chunk !== null) {
      reader.data(chunk as Buffer);
      return true;
    }
    this.bodyReader = undefined;
    reader.end();
    // The stream itself ends empty, so 'end' and 'close' still come to anyone who listens.
    const more = super.push(null);
    // The body was read here, so the stream is ended as a read to its end would: marked consumed, as
    // IncomingMessage's own _read marks it, and read(0) of an ended, empty stream schedules 'end' now.
    // Otherwise node:http "dumps" the request when the answer finishes (resume(), a tick to flow, another
    // to read(0)) to reach the same 'end'.
    (this as unknown as { _consuming: boolean })._consuming = true;
    this.read(0);
    return more;
  }
}

/** Where a ServeRequest's body goes instead of its stream: each chunk, then the end. */
export interface BodySink {
  data(chunk: Buffer): void;
  end(): void;
}

/**
 * One body being read: its chunks until the parser ends it, or until it passes `max`, which answers at
 * once and drops the rest.
 */
class BodyReader implements BodySink {
  private size = 0;
  private first: Buffer | undefined = undefined;
  private chunks: Buffer[] | undefined = undefined;
  private tooLarge = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly kind: BodyKind,
    private readonly max: number,
    private readonly done: BodyDone,
  ) {}

  data(c: Buffer): void {
    if (this.tooLarge) return;
    this.size += c.length;
    if (this.size > this.max) {
      this.tooLarge = true;
      this.first = this.chunks = undefined;
      return this.done(this.res, this.kind, undefined);
    }
    if (this.first === undefined) this.first = c;
    else (this.chunks ??= [this.first]).push(c);
  }

  end(): void {
    if (this.tooLarge) return;
    const { first, chunks } = this;
    // toString() without an argument is UTF-8 too, and skips the encoding lookup.
    this.done(this.res, this.kind, chunks !== undefined ? Buffer.concat(chunks).toString() : first === undefined ? '' : first.toString());
  }
}

/** Sends with Content-Length: without it Node frames the body as chunked, one more write per answer. */
function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = JSON_HEADERS): void {
  res.setHeader('content-length', Buffer.byteLength(body));
  res.writeHead(status, headers);
  res.end(body);
}

function problem(res: ServerResponse, status: number, message: string): void {
  send(res, status, JSON.stringify({ error: message }));
}

function withRateHeaders(r: RlsResponse): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  for (const [k, v] of r.headers) h[k] = v;
  return h;
}

export function createHttpServer(deps: HttpDeps): Server {
  const { service, log } = deps;

  /** A /json or /v1/check body's text: decoded (the compact form first), then decided. */
  function decideBody(res: ServerResponse, kind: BodyKind, text: string | undefined): void {
    if (text === undefined) return problem(res, 413, `the body is larger than ${deps.maxBodyBytes} bytes`);
    const fast = kind === 'json' ? decodeRlsJsonFast(text) : undefined;
    if (fast !== undefined) return decide(res, kind, fast);
    let parsed: unknown;
    try {
      // Measured before JSON.parse, and before anything recursive (JSON.stringify in a message) meets it.
      checkJsonDepth(text, REQUEST_BOUNDS.maxJsonDepth);
    } catch (e) {
      return answerError(res, e);
    }
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      return problem(res, 400, `the body is not valid JSON: ${(e as Error).message}`);
    }
    let rq: RlsRequest;
    try {
      const domains = service.rules.config.domains;
      rq = kind === 'json' ? decodeRlsJson(parsed) : decodeCheck(parsed, domains.size === 1 ? domains.keys().next().value : undefined);
    } catch (e) {
      return answerError(res, e);
    }
    decide(res, kind, rq);
  }

  function post(req: ServeRequest, res: ServerResponse, method: string, path: string, kind: BodyKind): void {
    if (method !== 'POST') return send(res, 405, JSON.stringify({ error: `${path} takes POST` }), { ...JSON_HEADERS, allow: 'POST' });
    readBody(req, res, kind, deps.maxBodyBytes, decideBody);
  }

  function decide(res: ServerResponse, kind: BodyKind, rq: RlsRequest): void {
    try {
      const answered = service.shouldRateLimit(rq);
      if (answered instanceof Promise) answered.then((r) => answer(res, kind, r), (e) => answerError(res, e));
      else answer(res, kind, answered);
    } catch (e) {
      answerError(res, e);
    }
  }

  function answer(res: ServerResponse, kind: BodyKind, r: RlsResponse): void {
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
      const headers: Record<string, string> = r.reason !== undefined ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'retry-after': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) };
      send(res, 429, renderRlsJson(r), headers);
    }
    else send(res, ok ? 200 : 429, renderCheck(r), withRateHeaders(r));
  }

  function answerError(res: ServerResponse, e: unknown): void {
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

  /** nginx auth_request: 200 passes; 403 (mapped to 429 by `error_page 403 = @ratelimited`) denies. */
  async function nginx(req: IncomingMessage, res: ServerResponse, domainName: string): Promise<void> {
    const domain = service.rules.domain(domainName);
    if (domain === undefined) {
      // As the RLS answers it: OK (pass), unless --strict-domains.
      service.unknownDomainRequests++;
      return service.strictDomains ? problem(res, 404, `unknown domain '${domainName}'`) : send(res, 200, '', {});
    }
    const descriptors: RequestDescriptor[] = [];
    for (const spec of domain.httpDescriptors) {
      const entries = [];
      for (const e of spec) {
        const v = req.headers[e.header];
        const value = Array.isArray(v) ? v[0] : v;
        if (value === undefined || value === '') break; // as Envoy's request_headers action: skip the descriptor
        entries.push({ key: e.key, value });
      }
      if (entries.length === spec.length) descriptors.push({ entries });
    }
    if (descriptors.length === 0) return send(res, 200, '', {});
    try {
      const answered = service.shouldRateLimit({ domain: domainName, descriptors, hitsAddend: 0 });
      const r = answered instanceof Promise ? await answered : answered;
      const h: Record<string, string> = {};
      for (const [k, v] of r.headers) h[k] = v;
      send(res, r.overallCode === 'OK' ? 200 : 403, '', h);
    } catch (e) {
      answerError(res, e);
    }
  }

  const limits = deps.limits;
  const options =
    limits === undefined
      ? { IncomingMessage: ServeRequest }
      : {
          IncomingMessage: ServeRequest,
          headersTimeout: limits.headersTimeoutMs,
          requestTimeout: limits.requestTimeoutMs,
          keepAliveTimeout: limits.keepAliveTimeoutMs,
          // Node checks the two timeouts every 30 s by default, which would let a slow client hold its socket
          // for the timeout plus up to 30 s.
          connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
        };
  const server = createServer(options, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    switch (path) {
      case '/json':
        return post(req, res, method, path, 'json');
      case '/v1/check':
        return post(req, res, method, path, 'check');
      case '/healthz':
        return send(res, deps.stopping() ? 503 : 200, deps.stopping() ? 'stopping\n' : 'ok\n', { 'content-type': 'text/plain' });
      case '/readyz':
      case '/healthcheck': // envoyproxy/ratelimit's path for the same question (store reachable, not stopping)
        if (deps.stopping()) return send(res, 503, 'stopping\n', { 'content-type': 'text/plain' });
        deps.ready().then(
          (ok) => send(res, ok ? 200 : 503, ok ? 'ready\n' : 'the store is not answering\n', { 'content-type': 'text/plain' }),
          (e) => answerError(res, e),
        );
        return;
      case '/metrics':
        deps.metrics.metrics().then((text) => send(res, 200, text, { 'content-type': deps.metrics.contentType }), (e) => answerError(res, e));
        return;
      case '/':
        return send(res, 200, deps.dashboard.page(), { 'content-type': 'text/html; charset=utf-8' });
      case '/events':
        return deps.dashboard.subscribe(req, res);
      case '/config':
        return send(res, 200, JSON.stringify(deps.dashboard.configView()));
    }
    if (path.startsWith('/nginx/')) {
      let domain: string;
      try {
        domain = decodeURIComponent(path.slice('/nginx/'.length));
      } catch {
        return problem(res, 400, `the domain in ${JSON.stringify(path)} is not valid percent-encoding`);
      }
      nginx(req, res, domain).catch((e) => answerError(res, e));
      return;
    }
    problem(res, 404, `no route ${method} ${path}; see / for the dashboard, POST /json, POST /v1/check, GET /nginx/<domain>, /healthz, /readyz (or /healthcheck), /metrics`);
  });
  if (limits !== undefined) server.maxConnections = limits.maxConnections;
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A request too slow to arrive (--headers-timeout-ms, --request-timeout-ms) is 408; malformed HTTP (bad
    // request line, oversized headers) is 400, instead of dropping silently.
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (socket.writable) socket.end(timedOut ? 'HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n' : 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
    log.debug({ err: err.message }, timedOut ? 'HTTP request too slow' : 'malformed HTTP request');
  });
  return server;
}
