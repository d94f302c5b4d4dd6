/**
 * Accepting connections on the service's HTTP listeners: the timeouts and caps that keep a slow or greedy
 * client from holding sockets (see --headers-timeout-ms and its siblings in settings.ts), and the answer
 * to a request that never arrived whole or is not HTTP.
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ConnectionTable } from './connection-table.js';
import { ServeRequest } from './http-body.js';

/** What a slow or greedy client may hold. */
export interface HttpLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
}

/**
 * How long a socket answered 408 or 400 may stay half-closed: node:http servers allow half-open sockets,
 * so after the answer and our FIN a client that never reads (nor closes) would otherwise keep its socket.
 */
const LINGER_AFTER_ERROR_MS = 1000;

/** createServer's options for these limits; Node's own defaults (60 s, 300 s, no cap) without them. */
export function serverOptions(limits: HttpLimits | undefined): ServerOptions<typeof ServeRequest> {
  if (limits === undefined) return { IncomingMessage: ServeRequest };
  return {
    IncomingMessage: ServeRequest,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts every 30 s by default, which would let a slow client hold its socket
    // for the timeout plus up to 30 s.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/**
 * The connection caps and the answer to a client error. The timeouts are set once, at creation: a server's
 * `headersTimeout` set after it replaces that one (serve.ts once set 66 s over --headers-timeout-ms).
 */
export function acceptWithin(server: Server, limits: HttpLimits | undefined, log: Logger): void {
  if (limits !== undefined) holdConnections(server, limits);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A request too slow to arrive (--headers-timeout-ms, --request-timeout-ms) is 408; malformed HTTP (bad
    // request line, oversized headers) is 400, instead of dropping silently.
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (socket.writable) {
      socket.end(
        timedOut
          ? 'HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'
          : 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n',
      );
      setTimeout(() => socket.destroy(), LINGER_AFTER_ERROR_MS).unref();
    } else socket.destroy();
    log.debug({ err: err.message }, timedOut ? 'HTTP request too slow' : 'malformed HTTP request');
  });
}

/**
 * --max-connections and --max-connections-per-address (connection-table.ts), in place of the server's own
 * maxConnections, which refused every newcomer once idle keep-alive sockets held the cap (issue 45,
 * finding 2). A socket is busy from its request's arrival until that request's answer is done; an idle
 * one chosen to make room is closed at once (its client's next request opens a new connection).
 */
function holdConnections(server: Server, limits: HttpLimits): void {
  const table = new ConnectionTable<Socket>(limits, (socket) => socket.destroy());
  const answering = new Set<ServerResponse>();
  const shutdown = { closing: false, answering, table };
  shutdowns.set(server, shutdown);
  server.on('connection', (socket: Socket) => {
    if (!table.admit(socket, socket.remoteAddress)) return void socket.destroy();
    socket.once('close', () => table.remove(socket));
  });
  // One listener for every answer, not a closure (and a `once` wrapper) per request: 'close' comes once.
  function answered(this: ServerResponse): void {
    answering.delete(this);
    table.done(this.req.socket);
  }
  // Before the route handler, which may answer (and end the response) synchronously.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    table.busy(req.socket);
    answering.add(res);
    if (shutdown.closing) res.shouldKeepAlive = false;
    res.on('close', answered);
  });
}

/** Per server: whether it is closing, the requests it is answering now, and its connections. */
const shutdowns = new WeakMap<
  Server,
  { closing: boolean; readonly answering: Set<ServerResponse>; readonly table: ConnectionTable<Socket> }
>();

/** Connections closed to make room, and newcomers refused with every connection busy, for /metrics. */
export function connectionCounts(server: Server): { evicted: number; refused: number } {
  const table = shutdowns.get(server)?.table;
  return { evicted: table?.evicted ?? 0, refused: table?.refused ?? 0 };
}

/**
 * Shutting down: every answer not yet sent, and every one to come, carries `Connection: close`, so that a
 * keep-alive connection is closed after its current request instead of cut in the middle of one.
 */
export function closeAfterCurrentRequests(server: Server): void {
  const shutdown = shutdowns.get(server);
  if (shutdown === undefined) return;
  shutdown.closing = true;
  for (const res of shutdown.answering) if (!res.headersSent) res.shouldKeepAlive = false;
}
