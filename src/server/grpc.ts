/**
 * Envoy's RateLimitService over gRPC, served by node:http2 with the hand-written codec in rls-proto.ts.
 *
 * One unary method, so the whole of gRPC this needs is small: a POST to one path, one length-prefixed
 * message in, one out, and the status in trailers (or a trailers-only answer for an error). @grpc/grpc-js
 * did the same with a general machinery (interceptors, metadata objects, protobufjs's object trees) that
 * cost more CPU per call than a whole /json request (docs/benchmarks.md, "The service").
 *
 * Errors, as Envoy's ratelimit filter reads them: a request that does not decode, or that the service
 * rejects, is INVALID_ARGUMENT naming the problem; a store failure with no failure policy is UNAVAILABLE,
 * which Envoy's `failure_mode_deny` then decides on; a message over the size limit is RESOURCE_EXHAUSTED;
 * another path is UNIMPLEMENTED; an asynchronous decision still pending at the caller's `grpc-timeout` is
 * DEADLINE_EXCEEDED. The transport follows grpc/doc/PROTOCOL-HTTP2.md: a non-POST is HTTP 405, a
 * content-type that is not application/grpc HTTP 415, and gzip and deflate messages are accepted.
 *
 * It also serves grpc.health.v1 on the same port: Check, which Envoy's grpc_health_check and Kubernetes'
 * gRPC probes call, answers SERVING, or NOT_SERVING while /readyz would answer 503; Watch, which gRPC
 * clients' own health checking (`healthCheckConfig` in a service config) holds open, streams the same
 * status each time it changes, and NOT_SERVING before the server stops.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';
import type { Logger } from 'pino';
import { decodeHealthCheckRequest, decodeRateLimitRequest, encodeRateLimitResponse } from './rls-proto.js';
import { BadRequest, StoreUnavailable } from './service.js';
import type { RateLimitService, RlsResponse } from './service.js';

export const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
export const SHOULD_RATE_LIMIT_PATH = `/${RLS_SERVICE}/ShouldRateLimit`;
/** grpc.health.v1's Check, which Envoy's grpc_health_check and Kubernetes' gRPC probes call. */
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';
/** grpc.health.v1's Watch: a stream of the status, one message at the start and one at each change. */
export const HEALTH_WATCH_PATH = '/grpc.health.v1.Health/Watch';

/** The gRPC status codes this server answers with (grpc/doc/statuscodes.md). */
export const GrpcStatus = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

const ENCODINGS = 'identity,deflate,gzip';
const ANSWER_HEADERS = { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': ENCODINGS };
const OK_TRAILERS = { 'grpc-status': '0' };

export interface GrpcServer {
  /** Listens on host:port (0: any free port) and resolves with the port. */
  listen(host: string, port: number): Promise<number>;
  /** Takes no new calls (GOAWAY on every connection) and resolves once the calls in flight are answered. */
  close(): Promise<void>;
  /** Ends every connection now. */
  destroy(): void;
  /** New TLS files for new connections (a rotated certificate); throws on bad PEM, keeping the old ones. */
  setTls(tls: GrpcTls): void;
}

/**
 * A message as gRPC frames it, in place: the 5 bytes left free at its front get the prefix (not compressed,
 * since the answers are a few hundred bytes; the length, big-endian).
 */
function framed(frame: Buffer): Buffer {
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - 5, 1);
  return frame;
}

/** HealthCheckResponse {status: SERVING (1) | NOT_SERVING (2) | SERVICE_UNKNOWN (3)}, framed once. */
const SERVING = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x01]));
const NOT_SERVING = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x02]));
const SERVICE_UNKNOWN = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x03]));

/** Ends a Watch: the stream's trailers when the server stops (clients then retry, with backoff, elsewhere). */
const STOPPING_TRAILERS = { 'grpc-status': '14', 'grpc-message': 'the server is shutting down' };

/** One open Watch call and the status it was last sent (undefined until the first). */
interface Watch {
  readonly stream: http2.ServerHttp2Stream;
  /** A service this server does not serve: told SERVICE_UNKNOWN once, and never anything else. */
  readonly unknown: boolean;
  last: Buffer | undefined;
}

export interface GrpcServerOptions {
  /** The service that decides; asked per call, since a config reload may replace it. */
  readonly service: () => RateLimitService;
  readonly log: Logger;
  /** The largest message, as sent and once inflated. */
  readonly maxMessageBytes: number;
  /**
   * What health checks report: false while shutting down, or while a Redis the service cannot decide
   * without is unreachable (the same test as /readyz).
   */
  readonly serving: () => Promise<boolean>;
  /**
   * Open Watch calls learn of a change within this: `serving` is asked that often while any is open, since
   * what it reports (a Redis reachable or not) has no event to wait on. Default 1000.
   */
  readonly watchEveryMs?: number;
  /**
   * Open Watch calls the server holds at most; one more is RESOURCE_EXHAUSTED. A gRPC client holds one per
   * channel, so this only stops a client that opens them without end. Default 1000.
   */
  readonly maxWatches?: number;
  /**
   * A connection this old (±10 %, so that a fleet's clients do not reconnect at once) is sent GOAWAY: its
   * client opens a new one, re-resolving DNS, which is how long-lived gRPC clients such as Envoy spread
   * over replicas added since they connected (gRPC's MAX_CONNECTION_AGE, Envoy ratelimit's
   * GRPC_MAX_CONNECTION_AGE). 0: never. Default 0.
   */
  readonly maxConnectionAgeMs?: number;
  /** After that GOAWAY, how long calls in flight (an open Watch, say) may go on before the connection is cut. */
  readonly maxConnectionAgeGraceMs?: number;
  /** Serve over TLS (HTTP/2 by ALPN only); with `clientCa`, clients must present a certificate it signed. */
  readonly tls?: GrpcTls;
  /** A connection with no call in flight for this long is sent GOAWAY (gRPC's MAX_CONNECTION_IDLE). 0: never. Default 0. */
  readonly maxConnectionIdleMs?: number;
  /** Calls in flight per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). Default Node's, 2^32 - 1. */
  readonly maxConcurrentStreams?: number;
  /** Every connection is pinged this often; a ping unanswered within `keepaliveTimeoutMs` closes it. 0: never. Default 0. */
  readonly keepaliveTimeMs?: number;
  /** Default 20,000. */
  readonly keepaliveTimeoutMs?: number;
  /**
   * A connection that has not opened a call within this (a client that connects and sends nothing, or
   * trickles its preface) is closed; over TLS, the handshake gets as long. 0: never. Default 0.
   */
  readonly firstCallTimeoutMs?: number;
  /** Open connections held at most; one more is closed at once. Default: no cap. */
  readonly maxConnections?: number;
}

/** PEM bytes of a certificate chain, its key, and optionally the CA that client certificates must chain to. */
export interface GrpcTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientCa?: Buffer;
}

function secureOptions(tls: GrpcTls): http2.SecureServerOptions {
  const mutual = tls.clientCa !== undefined;
  return { cert: tls.cert, key: tls.key, ...(mutual ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}), minVersion: 'TLSv1.2' };
}

export function createGrpcServer(options: GrpcServerOptions): GrpcServer {
  const { service, log, maxMessageBytes, serving, watchEveryMs = 1000, maxWatches = 1000, maxConnectionAgeMs = 0, maxConnectionAgeGraceMs = 0, tls } = options;
  const { maxConnectionIdleMs = 0, maxConcurrentStreams, keepaliveTimeMs = 0, keepaliveTimeoutMs = 20_000, firstCallTimeoutMs = 0, maxConnections } = options;
  const settings: http2.Settings = maxConcurrentStreams === undefined ? {} : { maxConcurrentStreams };
  // allowHTTP1 stays false: gRPC is HTTP/2 only, and ALPN then refuses an HTTP/1.1 client in the handshake.
  const server =
    tls === undefined
      ? http2.createServer({ settings })
      : http2.createSecureServer({ ...secureOptions(tls), settings, ...(firstCallTimeoutMs > 0 ? { handshakeTimeout: firstCallTimeoutMs } : {}) });
  if (maxConnections !== undefined) server.maxConnections = maxConnections;
  // A failed handshake (no client certificate, an unknown CA, plain text on the TLS port) costs that client its connection.
  server.on('tlsClientError', (e: Error) => log.debug({ err: e.message }, 'gRPC TLS handshake failed'));
  const watches = new Set<Watch>();
  let poll: NodeJS.Timeout | undefined;
  let asking = false;
  let closing = false;
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    let aged: NodeJS.Timeout | undefined;
    let cut: NodeJS.Timeout | undefined;
    if (maxConnectionAgeMs > 0) {
      aged = setTimeout(() => {
        session.close(); // GOAWAY: no new calls; the session ends when the calls in flight do
        cut = setTimeout(() => session.destroy(), maxConnectionAgeGraceMs).unref();
      }, maxConnectionAgeMs * (0.9 + 0.2 * Math.random())).unref();
    }
    // A client that connects and opens no call holds a socket for nothing: it gets firstCallTimeoutMs.
    let first = firstCallTimeoutMs > 0 ? setTimeout(() => session.destroy(), firstCallTimeoutMs).unref() : undefined;
    // MAX_CONNECTION_IDLE: the idle clock runs while no call is in flight.
    let inFlight = 0;
    let idle: NodeJS.Timeout | undefined;
    const idleFrom = () => {
      if (maxConnectionIdleMs > 0) idle = setTimeout(() => session.close(), maxConnectionIdleMs).unref();
    };
    idleFrom();
    session.on('stream', (stream) => {
      clearTimeout(first);
      first = undefined;
      clearTimeout(idle);
      inFlight++;
      stream.once('close', () => {
        if (--inFlight === 0 && !session.closed && !session.destroyed) idleFrom();
      });
    });
    // Keepalive: a peer that is gone (a half-open TCP connection) fails to answer a ping and is cut.
    let pinger: NodeJS.Timeout | undefined;
    if (keepaliveTimeMs > 0) {
      pinger = setInterval(() => {
        if (session.closed || session.destroyed) return;
        const late = setTimeout(() => session.destroy(), keepaliveTimeoutMs).unref();
        try {
          session.ping((err) => {
            clearTimeout(late);
            if (err !== null) session.destroy();
          });
        } catch {
          clearTimeout(late); // a ping could not be sent (the session is going away); nothing to wait for
        }
      }, keepaliveTimeMs).unref();
    }
    session.once('close', () => {
      sessions.delete(session);
      clearTimeout(aged);
      clearTimeout(cut);
      clearTimeout(first);
      clearTimeout(idle);
      clearInterval(pinger);
    });
  });
  // A client that breaks HTTP/2 (a bad preface, a protocol error) loses its connection, not the process.
  server.on('sessionError', (e) => log.debug({ err: e.message }, 'gRPC connection error'));

  server.on('stream', (stream, headers) => {
    // A client that resets its call makes the stream emit 'error'; unheard, that would crash the process.
    stream.on('error', (e) => log.debug({ err: e.message }, 'gRPC call error'));
    const path = headers[':path'];
    if (headers[':method'] !== 'POST') return stream.respond({ ':status': 405, allow: 'POST' }, { endStream: true });
    const type = headers['content-type'];
    if (typeof type !== 'string' || !type.startsWith('application/grpc')) {
      return stream.respond({ ':status': 415, 'content-type': 'text/plain' }, { endStream: true });
    }
    const method = path === SHOULD_RATE_LIMIT_PATH ? shouldRateLimit : path === HEALTH_CHECK_PATH ? healthCheck : path === HEALTH_WATCH_PATH ? healthWatch : undefined;
    if (method === undefined) return fail(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${String(path)}; this server serves ${SHOULD_RATE_LIMIT_PATH}, ${HEALTH_CHECK_PATH} and ${HEALTH_WATCH_PATH}`);
    const encoding = headers['grpc-encoding'] ?? 'identity';
    if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate') {
      return fail(stream, GrpcStatus.UNIMPLEMENTED, `grpc-encoding ${String(encoding)} is not supported; use one of ${ENCODINGS}`);
    }
    const deadlineMs = timeoutMs(headers['grpc-timeout']);

    // Most calls arrive in one DATA frame: keep the first chunk as it is, concatenate only if more come.
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    let size = 0;
    let refused = false;
    stream.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxMessageBytes + 5) {
        refused = true;
        first = more = undefined;
        fail(stream, GrpcStatus.RESOURCE_EXHAUSTED, `the message is larger than the limit of ${maxMessageBytes} bytes (--max-body-bytes)`);
        // Stop the client sending the rest; the answer above is already on its way.
        stream.close(http2.constants.NGHTTP2_NO_ERROR);
        return;
      }
      if (first === undefined) first = chunk;
      else (more ??= [first]).push(chunk);
    });
    stream.on('end', () => {
      if (refused) return;
      const bytes = more !== undefined ? Buffer.concat(more) : (first ?? Buffer.alloc(0));
      let message: Buffer;
      try {
        message = unframe(bytes, encoding, maxMessageBytes);
      } catch (e) {
        if (e instanceof GrpcError) return fail(stream, e.code, e.message);
        throw e;
      }
      method(stream, message, deadlineMs);
    });
  });

  function shouldRateLimit(stream: http2.ServerHttp2Stream, message: Buffer, deadlineMs: number | undefined): void {
    let answered: RlsResponse | Promise<RlsResponse>;
    try {
      answered = service().shouldRateLimit(decodeRateLimitRequest(message));
    } catch (e) {
      return failWith(stream, e);
    }
    if (!(answered instanceof Promise)) return answer(stream, framed(encodeRateLimitResponse(answered, 5)));
    // Only an asynchronous (Redis) decision can outlive the caller's deadline; a late answer is dropped.
    const timer = deadlineMs === undefined ? undefined : setTimeout(() => fail(stream, GrpcStatus.DEADLINE_EXCEEDED, `no decision within the call's grpc-timeout of ${deadlineMs} ms`), deadlineMs);
    answered.then(
      (r) => {
        clearTimeout(timer);
        answer(stream, framed(encodeRateLimitResponse(r, 5)));
      },
      (e: unknown) => {
        clearTimeout(timer);
        failWith(stream, e);
      },
    );
  }

  /** The HealthCheckRequest's service name, or undefined once a malformed request has been failed. */
  function healthServiceName(stream: http2.ServerHttp2Stream, message: Buffer): string | undefined {
    try {
      return decodeHealthCheckRequest(message);
    } catch (e) {
      failWith(stream, e);
      return undefined;
    }
  }

  function healthCheck(stream: http2.ServerHttp2Stream, message: Buffer): void {
    const name = healthServiceName(stream, message);
    if (name === undefined) return;
    // The health protocol: '' is the server as a whole; a service it does not serve is NOT_FOUND.
    if (name !== '' && name !== RLS_SERVICE) return fail(stream, GrpcStatus.NOT_FOUND, `unknown service ${name}; this server serves ${RLS_SERVICE}`);
    serving().then(
      (ok) => answer(stream, ok ? SERVING : NOT_SERVING),
      () => answer(stream, NOT_SERVING),
    );
  }

  function healthWatch(stream: http2.ServerHttp2Stream, message: Buffer): void {
    const name = healthServiceName(stream, message);
    if (name === undefined || stream.destroyed || stream.closed) return;
    if (watches.size >= maxWatches) return fail(stream, GrpcStatus.RESOURCE_EXHAUSTED, `this server already holds ${maxWatches} open Watch calls; use Check, or close one`);
    // The protocol: an unknown service is told SERVICE_UNKNOWN and the call stays open, not failed.
    const w: Watch = { stream, unknown: name !== '' && name !== RLS_SERVICE, last: undefined };
    stream.respond(ANSWER_HEADERS, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers(STOPPING_TRAILERS));
    stream.once('close', () => {
      watches.delete(w);
      if (watches.size === 0) stopPolling();
    });
    watches.add(w);
    if (closing) {
      send(w, w.unknown ? SERVICE_UNKNOWN : NOT_SERVING); // a call that slipped in before the GOAWAY must not hold the close open
      return void stream.end();
    }
    if (w.unknown) return send(w, SERVICE_UNKNOWN);
    poll ??= setInterval(askServing, watchEveryMs).unref();
    askServing();
  }

  /** Asks `serving` once (never twice at a time) and tells every Watch whose status it changes. */
  function askServing(): void {
    if (asking) return;
    asking = true;
    serving().then(
      (ok) => tellAll(ok ? SERVING : NOT_SERVING),
      () => tellAll(NOT_SERVING),
    );
  }

  function tellAll(status: Buffer): void {
    asking = false;
    if (closing) return; // every Watch has been told NOT_SERVING and ended
    for (const w of watches) if (!w.unknown) send(w, status);
  }

  function send(w: Watch, status: Buffer): void {
    if (w.last === status || w.stream.destroyed || w.stream.closed) return;
    w.last = status;
    w.stream.write(status);
  }

  function stopPolling(): void {
    clearInterval(poll);
    poll = undefined;
  }

  /** Every open Watch hears NOT_SERVING, then its call ends UNAVAILABLE, so that the server can close. */
  function endWatches(): void {
    closing = true;
    stopPolling();
    for (const w of watches) {
      if (!w.unknown) send(w, NOT_SERVING);
      if (!w.stream.destroyed && !w.stream.closed) w.stream.end();
    }
  }

  function failWith(stream: http2.ServerHttp2Stream, e: unknown): void {
    if (e instanceof BadRequest) return fail(stream, GrpcStatus.INVALID_ARGUMENT, e.message);
    if (e instanceof StoreUnavailable) return fail(stream, GrpcStatus.UNAVAILABLE, e.message);
    log.error({ err: e }, 'unexpected error in ShouldRateLimit');
    fail(stream, GrpcStatus.INTERNAL, 'internal error');
  }

  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      endWatches();
      for (const s of sessions) s.close();
      return closed;
    },
    setTls(next) {
      if (tls === undefined) throw new Error('this gRPC server was started without TLS; restart it with --grpc-tls-cert and --grpc-tls-key');
      (server as http2.Http2SecureServer).setSecureContext(secureOptions(next));
    },
    destroy() {
      stopPolling();
      for (const s of sessions) s.destroy();
      server.close();
    },
  };
}

/** A message answer: headers, the framed message, and grpc-status 0 in trailers. */
function answer(stream: http2.ServerHttp2Stream, frame: Buffer): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return; // the caller left, or a deadline answered first
  stream.respond(ANSWER_HEADERS, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers(OK_TRAILERS));
  stream.end(frame);
}

/** A trailers-only answer: the status and its message, no body. */
function fail(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': grpcMessage(message) }, { endStream: true });
}

class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The one message of a unary call: its 5-byte prefix (compressed flag, length) checked, and inflated. */
function unframe(bytes: Buffer, encoding: string, max: number): Buffer {
  if (bytes.length === 0) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'the call carried no RateLimitRequest');
  if (bytes.length < 5) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the message prefix is cut short: ${bytes.length} of 5 bytes`);
  const flag = bytes[0]!;
  const length = bytes.readUInt32BE(1);
  if (length > max) throw new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, `the message is larger than the limit of ${max} bytes (--max-body-bytes)`);
  if (5 + length > bytes.length) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the message is cut short: ${bytes.length - 5} of ${length} bytes`);
  if (5 + length < bytes.length) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'a ShouldRateLimit call carries exactly one message; this one carried more');
  const message = bytes.subarray(5);
  if (flag === 0) return message;
  if (flag !== 1) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the message's compressed flag is ${flag}, not 0 or 1`);
  if (encoding === 'identity') throw new GrpcError(GrpcStatus.INTERNAL, 'the message is marked compressed but the call has no grpc-encoding');
  try {
    // maxOutputLength: a small compressed message must not inflate past the limit (a zip bomb).
    return encoding === 'gzip' ? gunzipSync(message, { maxOutputLength: max }) : inflateSync(message, { maxOutputLength: max });
  } catch (e) {
    if (e instanceof RangeError) throw new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, `the message inflates past the limit of ${max} bytes (--max-body-bytes)`);
    throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `the ${encoding} message does not inflate: ${(e as Error).message}`);
  }
}

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** `grpc-timeout` (at most 8 digits and a unit) in milliseconds, at least 1; undefined when absent or malformed. */
export function timeoutMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  return m === null ? undefined : Math.max(1, Math.ceil(Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!));
}

/** grpc-message: UTF-8, percent-encoding every byte outside printable ASCII, and '%' itself. */
export function grpcMessage(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
