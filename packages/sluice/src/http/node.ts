/**
 * What the Node-based adapters (node:http, Express, Fastify, Koa, NestJS) share: a RequestInfo over IncomingMessage, the
 * hold of a shaped request that refunds its charge if the client leaves, lease release on finish or close,
 * and the default problem+json refusal.
 */
import { OutgoingMessage } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRateLimiter, Outcome } from './engine.js';
import type { HeaderTarget } from './headers.js';
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
    const socket = this.req.socket;
    if (socket === null || socket === undefined) return undefined;
    let address = peers.get(socket);
    if (address === undefined) {
      address = socket.remoteAddress;
      if (address !== undefined) peers.set(socket, address);
    }
    return address;
  }
}

/**
 * The peer address of each socket, as `socket.remoteAddress` first gave it. Node caches it too (in
 * `_peername`, once known it never changes), but reaching that cache goes through `socket._handle`, a
 * getter doing a keyed load of an internal symbol that is megamorphic on node:http's sockets: two
 * descriptor searches per request, against one WeakMap lookup here.
 */
const peers = new WeakMap<object, string>();

type Fields = Record<string, [string, string]>;

/**
 * Where a ServerResponse keeps the fields setHeader stores: `res[kOutHeaders][lower-case name] = [name,
 * value]` in a null-prototype object, an internal symbol of node:http since Node 8, found by its
 * description. It is learnt from the first real response a field is set on (`learnOutHeaders`): that field
 * goes through setHeader, and the store it lands in is checked. `null` until then, `undefined` if this Node
 * keeps its fields some other way, and every field then goes through setHeader.
 *
 * Not learnt at import from a probe `new OutgoingMessage()`, as it once was: importing a module should not
 * build a response, and one of another shape through OutgoingMessage's constructor and setHeader widened
 * V8's feedback for node:http's own code, which every request then paid for.
 */
let outHeaders: symbol | undefined | null = null;

/** Sets the field through setHeader, then finds and checks the store it went into (see `outHeaders`). */
function learnOutHeaders(res: ServerResponse, name: string, value: string): symbol | undefined {
  res.setHeader(name, value);
  const own = res as unknown as Record<symbol, unknown>;
  const sym = Object.getOwnPropertySymbols(own).find((s) => s.description === 'kOutHeaders');
  if (sym === undefined) return undefined;
  const store = own[sym] as Record<string, unknown> | null;
  const entry = store?.[name.toLowerCase()];
  const same =
    store !== null &&
    typeof store === 'object' &&
    Object.getPrototypeOf(store) === null &&
    Array.isArray(entry) &&
    entry.length === 2 &&
    entry[0] === name &&
    entry[1] === value;
  return same ? sym : undefined;
}
const NODE_SET_HEADER = OutgoingMessage.prototype.setHeader;

/**
 * The store setHeader creates, `{ __proto__: null }`, but with fast properties: a null-prototype literal is
 * a dictionary-mode object in V8, and filling it and walking it in writeHead cost more than the rest of the
 * middleware. Instances inherit nothing (their prototype has no properties, not even `constructor`), so
 * every lookup, `for...in` and Object.keys that node:http does on it behaves as on its own store.
 */
const HeaderFields = function HeaderFields() {} as unknown as new () => Fields;
HeaderFields.prototype = Object.create(null) as object;

/**
 * A HeaderTarget over a ServerResponse whose setTrustedHeader stores a field exactly as Node's setHeader
 * would, minus its name and value checks (the fields are checked where sluice builds them). It takes that
 * path only while it is indistinguishable from setHeader: headers not yet sent (setHeader would throw) and
 * setHeader not wrapped by anyone (an instrumentation that wraps it still sees every field).
 * Why: with draft-7 headers, two setHeader calls were most of sluice/http's cost on a bare server, mainly
 * their validation and the dictionary store.
 */
export class NodeHeaders implements HeaderTarget {
  constructor(private readonly res: ServerResponse) {}

  setHeader(name: string, value: string): void {
    this.res.setHeader(name, value);
  }

  setTrustedHeader(name: string, value: string): void {
    const res = this.res;
    if (outHeaders === undefined || res.setHeader !== NODE_SET_HEADER || res.headersSent) {
      res.setHeader(name, value);
      return;
    }
    if (outHeaders === null) {
      outHeaders = learnOutHeaders(res, name, value);
      return;
    }
    const own = res as unknown as Record<symbol, Fields | null>;
    let fields = own[outHeaders];
    if (fields === null) own[outHeaders] = fields = new HeaderFields();
    else if (typeof fields !== 'object') {
      res.setHeader(name, value);
      return;
    }
    storeField(fields, name, [name, value]);
  }
}

/**
 * `fields[name] = entry`, with a store site of its own for each name sluice sends. One keyed store that sees
 * several names is megamorphic in V8: every field then goes through the generic store stub, where a site
 * that only ever adds one name to one shape is a monomorphic transition. Any other name takes the keyed
 * store.
 */
function storeField(fields: Fields, name: string, entry: [string, string]): void {
  switch (name) {
    case 'ratelimit-policy':
      fields['ratelimit-policy'] = entry;
      return;
    case 'ratelimit':
      fields.ratelimit = entry;
      return;
    case 'retry-after':
      fields['retry-after'] = entry;
      return;
    case 'ratelimit-limit':
      fields['ratelimit-limit'] = entry;
      return;
    case 'ratelimit-remaining':
      fields['ratelimit-remaining'] = entry;
      return;
    case 'ratelimit-reset':
      fields['ratelimit-reset'] = entry;
      return;
    case 'x-ratelimit-limit':
      fields['x-ratelimit-limit'] = entry;
      return;
    case 'x-ratelimit-remaining':
      fields['x-ratelimit-remaining'] = entry;
      return;
    case 'x-ratelimit-used':
      fields['x-ratelimit-used'] = entry;
      return;
    case 'x-ratelimit-reset':
      fields['x-ratelimit-reset'] = entry;
      return;
    case 'x-ratelimit-resource':
      fields['x-ratelimit-resource'] = entry;
      return;
    default:
      fields[name] = entry;
  }
}

/** `go` for middleware whose continuation is a `next()` taking no arguments: `passNode(…, callNext, next, undefined)`. */
export const callNext = (next: () => void, _unused?: undefined): void => next();

/**
 * Lets a decided request through, `go(a, b)`: ends its concurrency lease when the response finishes or the
 * connection closes (errors included), and holds a shaped request `delayMs` first. A client that disconnects
 * while held is never passed on, and its charge is refunded so it frees its place. `go` takes its arguments
 * rather than closing over them, so a request passed at once allocates no closure.
 */
export function passNode<Req, Res, A, B>(
  engine: HttpRateLimiter<Req, Res>,
  o: Outcome<Req>,
  res: ServerResponse,
  go: (a: A, b: B) => void,
  a: A,
  b: B,
): void {
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
  if (o.delayMs <= 0) return go(a, b);
  const gone = () => {
    clearTimeout(timer);
    engine.refund(o);
  };
  const timer = setTimeout(() => {
    res.off('close', gone);
    go(a, b);
  }, o.delayMs);
  res.once('close', gone);
}

/**
 * `passNode` for middleware that continues by returning (Koa's `await next()`, a Nest guard's `true`):
 * true when the request goes on now, a Promise of true after its hold, false (or a Promise of false) when
 * its client left first, whose charge `passNode` gave back. Synchronous unless the request is held.
 */
export function passedNode<Req, Res>(
  engine: HttpRateLimiter<Req, Res>,
  o: Outcome<Req>,
  res: ServerResponse,
): boolean | Promise<boolean> {
  if (o.delayMs <= 0) {
    let go = false;
    passNode(engine, o, res, () => (go = true), undefined, undefined);
    return go;
  }
  return new Promise<boolean>((resolve) => {
    res.once('close', () => resolve(false));
    passNode(engine, o, res, () => resolve(true), undefined, undefined);
  });
}

/**
 * For `skipFailedRequests`/`skipSuccessfulRequests`: judges the response once it is over (finished, or
 * closed before it finished: a failure). `req` and `res` are what `requestWasSuccessful` receives.
 */
export function watchNode<Req, Res>(
  engine: HttpRateLimiter<Req, Res>,
  o: Outcome<Req>,
  req: Req,
  res: Res,
  raw: ServerResponse,
): void {
  let seen = false;
  const end = (completed: boolean) => {
    if (seen) return;
    seen = true;
    engine.responded(o, req, res, completed);
  };
  raw.once('finish', () => end(true));
  raw.once('close', () => end(raw.writableFinished));
}

/** Sends the default refusal: the outcome's status with an application/problem+json body (none for HEAD). */
export function refuseNode<Req, Res>(
  engine: HttpRateLimiter<Req, Res>,
  o: Outcome<Req>,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const body = JSON.stringify(engine.problem(o));
  res.statusCode = o.status;
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(req.method === 'HEAD' ? undefined : body);
}
