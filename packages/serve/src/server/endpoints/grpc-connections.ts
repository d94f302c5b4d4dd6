/**
 * Accepting gRPC connections: how many (the cap, and one address's share of it: connection-table.ts), how
 * long each may live (MAX_CONNECTION_AGE and its grace), stay idle (MAX_CONNECTION_IDLE), wait for its first
 * call, and whether its peer is still there (keepalive pings).
 */
import type http2 from 'node:http2';
import { ConnectionTable } from './connection-table.js';

export interface ConnectionLimits {
  /** GOAWAY at this age (±10 %, so that a fleet's clients do not reconnect at once); 0: never. */
  readonly maxConnectionAgeMs: number;
  /** After that GOAWAY, how long calls in flight may go on before the connection is cut. */
  readonly maxConnectionAgeGraceMs: number;
  /** GOAWAY after this long with no call in flight; 0: never. */
  readonly maxConnectionIdleMs: number;
  /** A ping this often, which must be answered within keepaliveTimeoutMs; 0: never. */
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  /** A connection that has not opened a call within this is closed; 0: never. */
  readonly firstCallTimeoutMs: number;
  /** Open connections at most: at the cap the longest-idle one (no call in flight) is sent GOAWAY to admit a new one. None: no cap. */
  readonly maxConnections?: number | undefined;
  /** Open connections from one address (IPv6: one /64) at most; at it, that address's longest-idle one makes room. Default: maxConnections. */
  readonly maxConnectionsPerAddress?: number | undefined;
}

/**
 * How long a connection sent GOAWAY to make room may take to close before it is cut: its client learns at
 * once, and a call it had just sent (the GOAWAY crossing it) is refused, which gRPC clients retry. One
 * that never sent its HTTP/2 settings has nothing to be told and is cut at once.
 */
const EVICTED_CLOSE_MS = 1000;

/** Holds every session of `server` to `limits`: the sessions open now, and the table that caps them (if any). */
export function acceptSessions(
  server: http2.Http2Server | http2.Http2SecureServer,
  limits: ConnectionLimits,
): { sessions: Set<http2.ServerHttp2Session>; table: ConnectionTable<http2.ServerHttp2Session> | undefined } {
  const {
    maxConnectionAgeMs,
    maxConnectionAgeGraceMs,
    maxConnectionIdleMs,
    keepaliveTimeMs,
    keepaliveTimeoutMs,
    firstCallTimeoutMs,
  } = limits;
  const sessions = new Set<http2.ServerHttp2Session>();
  const max = limits.maxConnections;
  const spoken = new WeakSet<http2.ServerHttp2Session>();
  const table =
    max === undefined
      ? undefined
      : new ConnectionTable<http2.ServerHttp2Session>(
          { maxConnections: max, maxConnectionsPerAddress: limits.maxConnectionsPerAddress ?? max },
          (session) => {
            if (!spoken.has(session)) return session.destroy();
            session.close();
            setTimeout(() => session.destroy(), EVICTED_CLOSE_MS).unref();
          },
        );
  server.on('session', (session: http2.ServerHttp2Session) => {
    // Issue 45, finding 3: the listener's own maxConnections refused every newcomer while idle connections
    // held the cap; the table closes the longest-idle one instead.
    // Its seat in the table, kept here: each call marks it busy and idle without a lookup by session.
    const seat = table?.admitSeat(session, session.socket?.remoteAddress);
    if (table !== undefined && seat === undefined) return session.destroy();
    sessions.add(session);
    session.once('remoteSettings', () => spoken.add(session));
    let aged: NodeJS.Timeout | undefined;
    let cut: NodeJS.Timeout | undefined;
    if (maxConnectionAgeMs > 0) {
      aged = setTimeout(
        () => {
          session.close(); // GOAWAY: no new calls; the session ends when the calls in flight do
          cut = setTimeout(() => session.destroy(), maxConnectionAgeGraceMs).unref();
        },
        maxConnectionAgeMs * (0.9 + 0.2 * Math.random()),
      ).unref();
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
    // One listener per connection, not a closure per call; 'close' comes once, so `on` (once wraps each).
    const callClosed = () => {
      if (seat !== undefined) table!.doneSeat(seat);
      if (--inFlight === 0 && !session.closed && !session.destroyed) idleFrom();
    };
    session.on('stream', (stream) => {
      clearTimeout(first);
      first = undefined;
      if (maxConnectionIdleMs === 0 && table === undefined) return; // neither the idle clock nor the table counts calls
      clearTimeout(idle);
      inFlight++;
      if (seat !== undefined) table!.busySeat(seat);
      stream.on('close', callClosed);
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
      table?.remove(session);
      clearTimeout(aged);
      clearTimeout(cut);
      clearTimeout(first);
      clearTimeout(idle);
      clearInterval(pinger);
    });
  });
  return { sessions, table };
}
