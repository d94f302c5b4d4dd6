/**
 * What the Node-based adapters (node:http, Express, Fastify) share: a RequestInfo over IncomingMessage, the
 * hold of a shaped request that refunds its charge if the client leaves, lease release on finish or close,
 * and the default problem+json refusal.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRateLimiter, Outcome } from './engine.js';
import type { RequestInfo } from './options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/** RequestInfo over a Node request. Fields are read lazily, so an unused path is never parsed. */
export class NodeRequestInfo implements RequestInfo {
  ip = '';
  constructor(private readonly req: IncomingMessage) {}

  get method(): string {
    return this.req.method ?? 'GET';
  }

  get path(): string {
    const url = this.req.url ?? '/';
    const q = url.indexOf('?');
    return q < 0 ? url : url.slice(0, q);
  }

  header(name: string): string | undefined {
    const v = this.req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  /** Scans rawHeaders, so that a request nobody reads headers from never builds `req.headers`. */
  has(name: string): boolean {
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const h = raw[i]!;
      if (h.length === name.length && h.toLowerCase() === name) return true;
    }
    return false;
  }

  get remoteAddress(): string | undefined {
    return this.req.socket?.remoteAddress;
  }
}

/**
 * Lets a decided request through: ends its concurrency lease when the response finishes or the connection
 * closes (errors included), and holds a shaped request `delayMs` first. A client that disconnects while held
 * is never passed on, and its charge is refunded so it frees its place.
 */
export function passNode<Req>(engine: HttpRateLimiter<Req>, o: Outcome<Req>, res: ServerResponse, go: () => void): void {
  if (res.closed || res.socket?.destroyed === true) {
    // The client left while an asynchronous decision was on its way: nothing to serve, nothing to hold.
    engine.refund(o);
    engine.release(o);
    return;
  }
  if (o.decision.leaseId !== undefined) {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      engine.release(o);
    };
    res.once('finish', end);
    res.once('close', end);
  }
  if (o.delayMs <= 0) return go();
  const gone = () => {
    clearTimeout(timer);
    engine.refund(o);
  };
  const timer = setTimeout(() => {
    res.off('close', gone);
    go();
  }, o.delayMs);
  res.once('close', gone);
}

/** Sends the default refusal: the configured status with an application/problem+json body (none for HEAD). */
export function refuseNode<Req>(engine: HttpRateLimiter<Req>, o: Outcome<Req>, req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(engine.problem(o));
  res.statusCode = engine.status;
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(req.method === 'HEAD' ? undefined : body);
}
