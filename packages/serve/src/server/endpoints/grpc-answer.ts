/**
 * Answering a gRPC call as grpc/doc/PROTOCOL-HTTP2.md frames it: a message answer (headers, the message,
 * grpc-status 0 in trailers) or a trailers-only error (the status and its message, no body).
 */
import type http2 from 'node:http2';
import type { Logger } from 'pino';
import { BadRequest, StoreUnavailable } from '../codecs/rls-types.js';

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

export const ENCODINGS = 'identity,deflate,gzip';
export const ANSWER_HEADERS = { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': ENCODINGS };
const OK_TRAILERS = { 'grpc-status': '0' };

/**
 * A message as gRPC frames it, in place: the 5 bytes left free at its front get the prefix (not compressed,
 * since the answers are a few hundred bytes; the length, big-endian).
 */
export function framed(frame: Buffer): Buffer {
  frame[0] = 0;
  frame.writeUInt32BE(frame.length - 5, 1);
  return frame;
}

/** A message answer: headers, the framed message, and grpc-status 0 in trailers. */
export function answer(stream: http2.ServerHttp2Stream, frame: Buffer): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return; // the caller left, or a deadline answered first
  stream.respond(ANSWER_HEADERS, WAIT_FOR_TRAILERS);
  // 'wantTrailers' comes once: one shared listener, with no closure (nor once's wrapper) per call.
  stream.on('wantTrailers', sendOkTrailers);
  stream.end(frame);
}

const WAIT_FOR_TRAILERS = { waitForTrailers: true };

function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** A trailers-only answer: the status and its message, no body. */
export function fail(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': grpcMessage(message),
    },
    { endStream: true },
  );
}

/** A failed decision: INVALID_ARGUMENT for a request the service cannot decide, UNAVAILABLE for the store, else INTERNAL. */
export function failWith(stream: http2.ServerHttp2Stream, log: Logger, e: unknown): void {
  if (e instanceof BadRequest) return fail(stream, GrpcStatus.INVALID_ARGUMENT, e.message);
  if (e instanceof StoreUnavailable) return fail(stream, GrpcStatus.UNAVAILABLE, e.message);
  log.error({ err: e }, 'unexpected error in ShouldRateLimit');
  fail(stream, GrpcStatus.INTERNAL, 'internal error');
}

/** grpc-message: UTF-8, percent-encoding every byte outside printable ASCII, and '%' itself. */
export function grpcMessage(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    out +=
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
