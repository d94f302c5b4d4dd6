/**
 * Accepting connections on the service's HTTP listeners: the timeouts and caps that keep a slow or greedy
 * client from holding sockets (see --headers-timeout-ms and its siblings in settings.ts), and the answer
 * to a request that never arrived whole or is not HTTP.
 */
import { ServerResponse } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ConnectionTable } from './connection-table.js';
import type { Seat } from './connection-table.js';
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

/** createServer's options: the request class, and for these limits the timeouts and the held response class. */
export type HttpServerOptions = ServerOptions<typeof ServeRequest, typeof ServerResponse>;

/**
 * createServer's options for these limits; Node's own defaults (60 s, 300 s, no cap) without them. Give the
 * same object to acceptWithin: with limits it carries the listener's connection table (Hold).
 */
export function serverOptions(limits: HttpLimits | undefined): HttpServerOptions {
  if (limits === undefined) return { IncomingMessage: ServeRequest };
  const hold = new Hold(limits);
  const options: HttpServerOptions = {
    IncomingMessage: ServeRequest,
    ServerResponse: hold.Response,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts every 30 s by default, which would let a slow client hold its socket
    // for the timeout plus up to 30 s.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
  };
  holdsByOptions.set(options, hold);
  return options;
}

/**
 * The connection caps and the answer to a client error. The timeouts are set once, at creation: a server's
 * `headersTimeout` set after it replaces that one (serve.ts once set 66 s over --headers-timeout-ms).
 * `options`: what serverOptions gave createServer for this server.
 */
export function acceptWithin(server: Server, options: HttpServerOptions, log: Logger): void {
  const hold = holdsByOptions.get(options);
  if (hold !== undefined) hold.attach(server);
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
 * ServerResponse as node:http constructs it: with the request and its options (the socket's high-water mark,
 * rejectNonStandardBodyWrites), which Node's types leave out of the constructor.
 */
const ResponseBase = ServerResponse as unknown as new (req: IncomingMessage, options?: object) => ServerResponse;

const holdsByOptions = new WeakMap<HttpServerOptions, Hold>();
/**
 * A held socket's seat in its listener's table, set when it is admitted: each request marks it busy and
 * idle without a lookup by socket (two Map lookups a request, measured at 1-3 % of a /json call).
 */
const kSeat = Symbol('sluice.seat');
type SeatedSocket = Socket & { [kSeat]?: Seat<Socket> };
/** Per server with limits: its Hold. */
const holds = new WeakMap<Server, Hold>();

/**
 * --max-connections and --max-connections-per-address (connection-table.ts), in place of the server's own
 * maxConnections, which refused every newcomer once idle keep-alive sockets held the cap (issue 45,
 * finding 2). A socket is busy from its request's arrival until that request's answer is done; an idle
 * one chosen to make room is closed at once (its client's next request opens a new connection).
 *
 * The per-request steps are in the server's own response class (Response): node:http constructs it for
 * each request (busy), calls its writeHead before any head is written (Connection: close once shutting
 * down) and its detachSocket when the answer has finished (idle). A 'request' listener before the route's,
 * a 'close' listener per response and a Set of the responses being answered cost about as much as the
 * table itself; a response whose socket closes first is never detached, and the socket's 'close' takes
 * its connection out of the table instead.
 */
class Hold {
  /** Shutting down: every head written from now on says `Connection: close`. */
  closing = false;
  readonly table: ConnectionTable<Socket>;
  readonly Response: typeof ServerResponse;

  constructor(limits: HttpLimits) {
    const table = new ConnectionTable<Socket>(limits, (socket) => socket.destroy());
    this.table = table;
    const hold = this;
    this.Response = class HeldResponse extends ResponseBase {
      /** Its socket's seat; undefined for a socket the table never took. */
      readonly seat: Seat<Socket> | undefined;

      constructor(req: IncomingMessage, options?: object) {
        super(req, options);
        const seat = (req.socket as SeatedSocket)[kSeat];
        if (seat !== undefined) table.busySeat(seat);
        this.seat = seat;
      }

      // node:http's writeHead, whose overloads take (status, headers) or (status, reason, headers).
      override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
        if (hold.closing) this.shouldKeepAlive = false;
        return super.writeHead(statusCode, reason as string, headers as OutgoingHttpHeaders);
      }

      override detachSocket(socket: Socket): void {
        super.detachSocket(socket);
        if (this.seat !== undefined) table.doneSeat(this.seat);
      }
    } as unknown as typeof ServerResponse;
  }

  attach(server: Server): void {
    const table = this.table;
    holds.set(server, this);
    server.on('connection', (socket: SeatedSocket) => {
      const seat = table.admitSeat(socket, socket.remoteAddress);
      if (seat === undefined) return void socket.destroy();
      socket[kSeat] = seat;
      socket.once('close', () => table.remove(socket));
    });
  }
}

/** Connections closed to make room, and newcomers refused with every connection busy, for /metrics. */
export function connectionCounts(server: Server): { evicted: number; refused: number } {
  const table = holds.get(server)?.table;
  return { evicted: table?.evicted ?? 0, refused: table?.refused ?? 0 };
}

/**
 * Shutting down: every answer not yet sent, and every one to come, carries `Connection: close`, so that a
 * keep-alive connection is closed after its current request instead of cut in the middle of one.
 */
export function closeAfterCurrentRequests(server: Server): void {
  const hold = holds.get(server);
  if (hold !== undefined) hold.closing = true;
}
