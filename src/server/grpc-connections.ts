/**
 * Accepting gRPC connections: how long each may live (MAX_CONNECTION_AGE and its grace), stay idle
 * (MAX_CONNECTION_IDLE), wait for its first call, and whether its peer is still there (keepalive pings).
 */
import type http2 from 'node:http2';

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
}

/** Holds every session of `server` to `limits`; the returned set is the sessions open now. */
export function acceptSessions(server: http2.Http2Server | http2.Http2SecureServer, limits: ConnectionLimits): Set<http2.ServerHttp2Session> {
  const { maxConnectionAgeMs, maxConnectionAgeGraceMs, maxConnectionIdleMs, keepaliveTimeMs, keepaliveTimeoutMs, firstCallTimeoutMs } = limits;
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session: http2.ServerHttp2Session) => {
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
    // One listener per connection, not a closure per call; 'close' comes once, so `on` (once wraps each).
    const callClosed = () => {
      if (--inFlight === 0 && !session.closed && !session.destroyed) idleFrom();
    };
    session.on('stream', (stream) => {
      clearTimeout(first);
      first = undefined;
      if (maxConnectionIdleMs === 0) return; // no idle clock: the calls need no counting
      clearTimeout(idle);
      inFlight++;
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
      clearTimeout(aged);
      clearTimeout(cut);
      clearTimeout(first);
      clearTimeout(idle);
      clearInterval(pinger);
    });
  });
  return sessions;
}
