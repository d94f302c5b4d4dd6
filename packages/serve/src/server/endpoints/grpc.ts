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
 * It also serves grpc.health.v1 on the same port (grpc-health.ts). The parts are apart: accepting
 * connections (grpc-connections.ts), reading a call's message (grpc-message.ts), deciding (here, through
 * the service) and answering (grpc-answer.ts).
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { check } from 'sluice/kit';
import { answer, ENCODINGS, fail, failWith, framed, GrpcStatus } from './grpc-answer.js';
import { acceptSessions } from './grpc-connections.js';
import { HEALTH_CHECK_PATH, HEALTH_WATCH_PATH, HealthService, RLS_SERVICE } from './grpc-health.js';
import { PendingCalls, readMessage, timeoutMs, type MessageDone } from './grpc-message.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from '../codecs/rls-proto.js';
import type { EnvoyWire } from '../codecs/envoy-wire.js';
import type { RateLimitService } from '../service.js';
import type { RlsResponse } from '../codecs/rls-types.js';

export { grpcMessage, GrpcStatus } from './grpc-answer.js';
export { timeoutMs } from './grpc-message.js';
export { HEALTH_CHECK_PATH, HEALTH_WATCH_PATH, RLS_SERVICE } from './grpc-health.js';
export const SHOULD_RATE_LIMIT_PATH = `/${RLS_SERVICE}/ShouldRateLimit`;

export interface GrpcServer {
  /** Listens on host:port (0: any free port) and resolves with the port. */
  listen(host: string, port: number): Promise<number>;
  /** Takes no new calls (GOAWAY on every connection) and resolves once the calls in flight are answered. */
  close(): Promise<void>;
  /** Ends every connection now. */
  destroy(): void;
  /** Connections closed to make room, newcomers refused with every connection busy, and pending calls shed for another connection's. */
  shedding(): { evicted: number; refused: number; callsShed: number };
  /** New TLS files for new connections (a rotated certificate); throws on bad PEM, keeping the old ones. */
  setTls(tls: GrpcTls): void;
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
  /**
   * Open connections held at most; at the cap the longest-idle connection (no call in flight) is sent GOAWAY
   * to admit a new one, and a new one is refused only when every connection has a call in flight. Default: no cap.
   */
  readonly maxConnections?: number;
  /** Open connections one address (IPv6: one /64) holds at most; at it, that address's longest-idle one makes room. Default: maxConnections. */
  readonly maxConnectionsPerAddress?: number;
  /**
   * A call's message must have arrived whole within this of its start (a call whose message never
   * finishes is otherwise held forever); it is then DEADLINE_EXCEEDED. 0: no bound. Default 10,000.
   */
  readonly messageTimeoutMs?: number;
  /**
   * Calls whose message has not arrived whole, across every connection, held at most; at it, the connection
   * holding the most gives up its oldest for a newcomer (grpc-message.ts). Default 4096.
   */
  readonly maxPendingCalls?: number;
  /** Such calls one connection holds at most; one more on it is RESOURCE_EXHAUSTED. Default maxPendingCalls. */
  readonly maxPendingCallsPerConnection?: number;
  /** Such calls one client address (IPv6: one /64) holds at most. Default maxPendingCalls. */
  readonly maxPendingCallsPerAddress?: number;
  /** Bytes those calls may hold together; past it, the address holding the most gives some up. Default 64 MiB. */
  readonly maxPendingBytes?: number;
  /** Bytes such calls from one client address (IPv6: one /64) may hold; past it, its fullest connection gives some up. Default 16 MiB. */
  readonly maxPendingBytesPerAddress?: number;
  /** Answer as envoyproxy/ratelimit does (envoy-wire.ts); undefined: sluice's richer answers (--answers sluice). */
  readonly envoyWire?: EnvoyWire | undefined;
}

function pendingCalls(options: GrpcServerOptions): PendingCalls {
  const positive = (value: number, name: string) => check.positiveInteger(value, `createGrpcServer '${name}'`);
  const max = positive(options.maxPendingCalls ?? 4096, 'maxPendingCalls');
  return new PendingCalls(
    max,
    positive(options.maxPendingBytes ?? 64 * 1024 * 1024, 'maxPendingBytes'),
    positive(options.maxPendingCallsPerConnection ?? max, 'maxPendingCallsPerConnection'),
    positive(options.maxPendingCallsPerAddress ?? max, 'maxPendingCallsPerAddress'),
    positive(options.maxPendingBytesPerAddress ?? 16 * 1024 * 1024, 'maxPendingBytesPerAddress'),
  );
}

/** PEM bytes of a certificate chain, its key, and optionally the CA that client certificates must chain to. */
export interface GrpcTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientCa?: Buffer;
}

function secureOptions(tls: GrpcTls): http2.SecureServerOptions {
  const mutual = tls.clientCa !== undefined;
  return {
    cert: tls.cert,
    key: tls.key,
    ...(mutual ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
    minVersion: 'TLSv1.2',
  };
}

export function createGrpcServer(options: GrpcServerOptions): GrpcServer {
  const { service, log, maxMessageBytes, tls, maxConcurrentStreams, maxConnections } = options;
  const settings: http2.Settings = maxConcurrentStreams === undefined ? {} : { maxConcurrentStreams };
  const firstCallTimeoutMs = options.firstCallTimeoutMs ?? 0;
  // allowHTTP1 stays false: gRPC is HTTP/2 only, and ALPN then refuses an HTTP/1.1 client in the handshake.
  const server =
    tls === undefined
      ? http2.createServer({ settings })
      : http2.createSecureServer({
          ...secureOptions(tls),
          settings,
          ...(firstCallTimeoutMs > 0 ? { handshakeTimeout: firstCallTimeoutMs } : {}),
        });
  // The cap itself is on sessions (grpc-connections.ts), which can make room; the sockets' ceiling is
  // twice it, for connections still in their TLS handshake (cut by firstCallTimeoutMs) and sessions sent
  // GOAWAY to make room and not yet closed.
  if (maxConnections !== undefined) server.maxConnections = 2 * maxConnections;
  // A failed handshake (no client certificate, an unknown CA, plain text on the TLS port) costs that client its connection.
  server.on('tlsClientError', (e: Error) => log.debug({ err: e.message }, 'gRPC TLS handshake failed'));
  const { sessions, table } = acceptSessions(server, {
    maxConnectionAgeMs: options.maxConnectionAgeMs ?? 0,
    maxConnectionAgeGraceMs: options.maxConnectionAgeGraceMs ?? 0,
    maxConnectionIdleMs: options.maxConnectionIdleMs ?? 0,
    keepaliveTimeMs: options.keepaliveTimeMs ?? 0,
    keepaliveTimeoutMs: options.keepaliveTimeoutMs ?? 20_000,
    firstCallTimeoutMs,
    maxConnections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress,
  });
  // A client that breaks HTTP/2 (a bad preface, a protocol error) loses its connection, not the process.
  server.on('sessionError', (e) => log.debug({ err: e.message }, 'gRPC connection error'));

  const health = new HealthService({
    serving: options.serving,
    log,
    watchEveryMs: options.watchEveryMs ?? 1000,
    maxWatches: options.maxWatches ?? 1000,
  });
  const limits = {
    maxMessageBytes,
    messageTimeoutMs: options.messageTimeoutMs ?? 10_000,
    pending: pendingCalls(options),
  };
  // Each as readMessage calls it (message first), made once here rather than a closure per call.
  const methods = new Map<unknown, MessageDone>([
    [SHOULD_RATE_LIMIT_PATH, shouldRateLimit],
    [HEALTH_CHECK_PATH, (message, stream) => health.check(stream, message)],
    [HEALTH_WATCH_PATH, (message, stream) => health.watch(stream, message)],
  ]);

  // A client that resets its call makes the stream emit 'error'; unheard, that would crash the process.
  // One listener for every call, not a closure each.
  const onCallError = (e: Error) => log.debug({ err: e.message }, 'gRPC call error');
  server.on('stream', (stream, headers) => {
    stream.on('error', onCallError);
    const path = headers[':path'];
    if (headers[':method'] !== 'POST') return stream.respond({ ':status': 405, allow: 'POST' }, { endStream: true });
    const type = headers['content-type'];
    if (typeof type !== 'string' || !type.startsWith('application/grpc')) {
      return stream.respond({ ':status': 415, 'content-type': 'text/plain' }, { endStream: true });
    }
    // ShouldRateLimit first, by comparing texts: a Map lookup would hash the path, a new string every call.
    const method = path === SHOULD_RATE_LIMIT_PATH ? shouldRateLimit : methods.get(path);
    if (method === undefined)
      return fail(
        stream,
        GrpcStatus.UNIMPLEMENTED,
        `unknown method ${String(path)}; this server serves ${SHOULD_RATE_LIMIT_PATH}, ${HEALTH_CHECK_PATH} and ${HEALTH_WATCH_PATH}`,
      );
    const encoding = headers['grpc-encoding'] ?? 'identity';
    if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate') {
      return fail(
        stream,
        GrpcStatus.UNIMPLEMENTED,
        `grpc-encoding ${String(encoding)} is not supported; use one of ${ENCODINGS}`,
      );
    }
    const deadlineMs = timeoutMs(headers['grpc-timeout']);
    readMessage(stream, encoding, limits, method, deadlineMs);
  });

  const wire = options.envoyWire;
  /** The answer's message, with room for the gRPC prefix: as Envoy's service would send it, or sluice's own. */
  const encode = (r: RlsResponse): Buffer =>
    encodeRateLimitResponse(r, 5, wire, wire === undefined ? 0 : service().now());

  /** Deciding: the service's answer, framed; an asynchronous one bounded by the caller's grpc-timeout. */
  function shouldRateLimit(message: Buffer, stream: http2.ServerHttp2Stream, deadlineMs: number | undefined): void {
    let answered: RlsResponse | Promise<RlsResponse>;
    try {
      answered = service().shouldRateLimit(decodeRateLimitRequest(message));
    } catch (e) {
      return failWith(stream, log, e);
    }
    if (!(answered instanceof Promise)) return answer(stream, framed(encode(answered)));
    // Only an asynchronous (Redis) decision can outlive the caller's deadline; a late answer is dropped.
    const timer =
      deadlineMs === undefined
        ? undefined
        : setTimeout(
            () =>
              fail(
                stream,
                GrpcStatus.DEADLINE_EXCEEDED,
                `no decision within the call's grpc-timeout of ${deadlineMs} ms`,
              ),
            deadlineMs,
          );
    answered.then(
      (r) => {
        clearTimeout(timer);
        answer(stream, framed(encode(r)));
      },
      (e: unknown) => {
        clearTimeout(timer);
        failWith(stream, log, e);
      },
    );
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
      health.endWatches();
      for (const s of sessions) s.close();
      return closed;
    },
    setTls(next) {
      if (tls === undefined)
        throw new Error('this gRPC server was started without TLS; restart it with --grpc-tls-cert and --grpc-tls-key');
      (server as http2.Http2SecureServer).setSecureContext(secureOptions(next));
    },
    shedding() {
      return { evicted: table?.evicted ?? 0, refused: table?.refused ?? 0, callsShed: limits.pending.shed };
    },
    destroy() {
      health.stopPolling();
      for (const s of sessions) s.destroy();
      server.close();
    },
  };
}
