/**
 * Reading a decision request's body on node:http without a stream per chunk: the request class node:http
 * builds (ServeRequest) hands its body to a reader that keeps at most `max` bytes and calls back once.
 */
import { IncomingMessage } from 'node:http';
import type { ServerResponse } from 'node:http';

/** Which decision route a body is for: /json (Envoy's RateLimitRequest) or /v1/check (sluice's own shape). */
export type BodyKind = 'json' | 'check';
/** Where a body's text goes: `undefined` once the body is too large (drained, so 413 can still be sent). */
export type BodyDone = (res: ServerResponse, kind: BodyKind, text: string | undefined) => void;

/**
 * Reads a body of at most `max` bytes and calls back with its text, or with `undefined` once it is too
 * large (then the rest is dropped as it arrives, so the connection can still answer 413). Callbacks, not
 * a Promise: this is the hottest path of /json, and an async chain cost measurably more than the decision.
 */
export function readBody(req: ServeRequest, res: ServerResponse, kind: BodyKind, max: number, done: BodyDone): void {
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
    // The stream itself ends empty, so 'end' and 'close' still come to anyone who listens.
    const more = super.push(null);
    // The body was read here, so the stream is ended as a read to its end would: marked consumed, as
    // IncomingMessage's own _read marks it, and read(0) of an ended, empty stream schedules 'end' now.
    // Otherwise node:http "dumps" the request when the answer finishes (resume(), a tick to flow, another
    // to read(0)) to reach the same 'end'.
    (this as unknown as { _consuming: boolean })._consuming = true;
    this.read(0);
    // Only then the body goes to its reader, which may answer at once: 'end' is then scheduled before the
    // answer's write, so the request has ended when the answer finishes. Answered first, the answer finished
    // first, and node:http added an 'end' listener to every request (clearIncoming) to let go of it later.
    reader.end();
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
    this.done(
      this.res,
      this.kind,
      chunks !== undefined ? Buffer.concat(chunks).toString() : first === undefined ? '' : first.toString(),
    );
  }
}
