/**
 * How `sluice serve` reads a JSON body without node:http's Readable machinery.
 *
 * Why the subclass exists: node:http hands a body to its IncomingMessage by calling `push(chunk)` from the
 * parser (parserOnBody in lib/_http_common.js) and `push(null)` at the end of the message
 * (parserOnMessageComplete), both within the same parse of the socket's bytes. Reading that body the usual
 * way (`req.on('data')`, 'end') buffers it in the Readable and delivers it on a later tick, in flowing mode.
 * BodyRequest's `push` hands the chunks straight to the route that asked for them and calls it back from the
 * end-of-message push, so /json answers within the parser's pass, as a bare server answers from its
 * headers. `push(null)` still reaches Readable, so the request ends as any other does, and a request nobody
 * captured is a plain IncomingMessage. Measured (bench/serve/instructions-in-process.mjs under callgrind):
 * instructions per request are within a few % of the stream path, so this is not where /json's gap to a
 * bare server is; it is kept for answering in the parser's pass and for holding no body in the stream.
 */
import { IncomingMessage } from 'node:http';

/** Called once per body: with its text (UTF-8), or with `undefined` once it exceeded the limit. */
export type BodyDone = (text: string | undefined) => void;

/** Stands in for `done` once the body is over the limit: the rest of it is drained and dropped. */
const DRAIN: BodyDone = () => {};

export class BodyRequest extends IncomingMessage {
  private bodyDone: BodyDone | undefined = undefined;
  private bodyMax = 0;
  private bodySize = 0;
  private bodyFirst: Buffer | undefined = undefined;
  private bodyChunks: Buffer[] | undefined = undefined;

  /**
   * Routes the body's chunks to `done` instead of the stream. False when it is too late for that (the
   * message is complete or some of it is buffered in the stream already): the caller then reads the stream.
   */
  captureBody(max: number, done: BodyDone): boolean {
    if (this.complete || this.readableLength > 0 || this.readableFlowing !== null || this.bodyDone !== undefined) return false;
    this.bodyMax = max;
    this.bodyDone = done;
    return true;
  }

  /** Declines the body (its size is over the limit already): the rest of it is drained and dropped. */
  drainBody(): boolean {
    return this.captureBody(0, DRAIN);
  }

  override push(chunk: Buffer | null, encoding?: BufferEncoding): boolean {
    const done = this.bodyDone;
    if (done === undefined) return super.push(chunk, encoding);
    if (chunk === null) {
      this.bodyDone = undefined;
      const pushed = super.push(null);
      // The body is consumed: let the stream run to its end now, as Node's resOnFinish would for an unread
      // body, so the request has ended by the time the answer is out and needs no 'end' listener then.
      this.resume();
      if (done !== DRAIN) {
        const first = this.bodyFirst;
        const chunks = this.bodyChunks;
        this.bodyFirst = this.bodyChunks = undefined;
        // toString() without an argument is UTF-8 too, and skips the encoding lookup.
        done(chunks !== undefined ? Buffer.concat(chunks).toString() : first === undefined ? '' : first.toString());
      }
      return pushed;
    }
    if (done === DRAIN) return true;
    const size = (this.bodySize += chunk.length);
    if (size > this.bodyMax) {
      this.bodyDone = DRAIN;
      this.bodyFirst = this.bodyChunks = undefined;
      done(undefined);
    } else if (this.bodyFirst === undefined) this.bodyFirst = chunk;
    else (this.bodyChunks ??= [this.bodyFirst]).push(chunk);
    return true;
  }
}

/**
 * Reads a body of at most `max` bytes and calls back with its text, or with `undefined` once it is too
 * large (draining the rest, so the connection can still answer 413). A BodyRequest is answered from the
 * parser's end-of-message push; any other request (or one too late to capture) through its stream.
 */
export function readBody(req: IncomingMessage, max: number, done: BodyDone): void {
  const declared = Number(req.headers['content-length']); // Node built req.headers already (its Host check)
  if (declared > max) {
    if (!(req instanceof BodyRequest && req.drainBody())) req.resume();
    return done(undefined);
  }
  if (req instanceof BodyRequest && req.captureBody(max, done)) return;
  let size = 0;
  const chunks: Buffer[] = [];
  let finished = false;
  req.on('data', (c: Buffer) => {
    if (finished) return;
    size += c.length;
    if (size <= max) return void chunks.push(c);
    finished = true;
    chunks.length = 0;
    done(undefined);
  });
  req.on('end', () => {
    if (!finished) done(Buffer.concat(chunks).toString());
  });
}
