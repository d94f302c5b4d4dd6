/**
 * grpc.health.v1 on the gRPC port: Check, which Envoy's grpc_health_check and Kubernetes' gRPC probes call,
 * answers SERVING, or NOT_SERVING while /readyz would answer 503; Watch, which gRPC clients' own health
 * checking (`healthCheckConfig` in a service config) holds open, streams the same status each time it
 * changes, and NOT_SERVING before the server stops.
 */
import type http2 from 'node:http2';
import type { Logger } from 'pino';
import { ANSWER_HEADERS, answer, fail, failWith, framed, GrpcStatus } from './grpc-answer.js';
import { decodeHealthCheckRequest } from '../codecs/rls-proto.js';

export const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
/** grpc.health.v1's Check, which Envoy's grpc_health_check and Kubernetes' gRPC probes call. */
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';
/** grpc.health.v1's Watch: a stream of the status, one message at the start and one at each change. */
export const HEALTH_WATCH_PATH = '/grpc.health.v1.Health/Watch';

/** HealthCheckResponse {status: SERVING (1) | NOT_SERVING (2) | SERVICE_UNKNOWN (3)}, framed once. */
const SERVING = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x01]));
const NOT_SERVING = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x02]));
const SERVICE_UNKNOWN = framed(Buffer.from([0, 0, 0, 0, 0, 0x08, 0x03]));

/** Ends a Watch: the stream's trailers when the server stops (clients then retry, with backoff, elsewhere). */
const STOPPING_TRAILERS = { 'grpc-status': '14', 'grpc-message': 'the server is shutting down' };

/** One open Watch call and the status it was last sent (undefined until the first). */
interface Watch {
  readonly stream: http2.ServerHttp2Stream;
  /** A service this server does not serve: told SERVICE_UNKNOWN once, and never anything else. */
  readonly unknown: boolean;
  last: Buffer | undefined;
}

export interface HealthOptions {
  /** What health checks report: false while shutting down, or while the store cannot decide (as /readyz). */
  readonly serving: () => Promise<boolean>;
  readonly log: Logger;
  /** Open Watch calls learn of a change within this: `serving` is asked that often while any is open. */
  readonly watchEveryMs: number;
  /** Open Watch calls held at most; one more is RESOURCE_EXHAUSTED. */
  readonly maxWatches: number;
}

export class HealthService {
  private readonly watches = new Set<Watch>();
  private poll: NodeJS.Timeout | undefined;
  private asking = false;
  private closing = false;

  constructor(private readonly options: HealthOptions) {}

  /** The HealthCheckRequest's service name, or undefined once a malformed request has been failed. */
  private serviceName(stream: http2.ServerHttp2Stream, message: Buffer): string | undefined {
    try {
      return decodeHealthCheckRequest(message);
    } catch (e) {
      failWith(stream, this.options.log, e);
      return undefined;
    }
  }

  readonly check = (stream: http2.ServerHttp2Stream, message: Buffer): void => {
    const name = this.serviceName(stream, message);
    if (name === undefined) return;
    // The health protocol: '' is the server as a whole; a service it does not serve is NOT_FOUND.
    if (name !== '' && name !== RLS_SERVICE)
      return fail(stream, GrpcStatus.NOT_FOUND, `unknown service ${name}; this server serves ${RLS_SERVICE}`);
    this.options.serving().then(
      (ok) => answer(stream, ok ? SERVING : NOT_SERVING),
      () => answer(stream, NOT_SERVING),
    );
  };

  readonly watch = (stream: http2.ServerHttp2Stream, message: Buffer): void => {
    const name = this.serviceName(stream, message);
    if (name === undefined || stream.destroyed || stream.closed) return;
    const { maxWatches } = this.options;
    if (this.watches.size >= maxWatches)
      return fail(
        stream,
        GrpcStatus.RESOURCE_EXHAUSTED,
        `this server already holds ${maxWatches} open Watch calls; use Check, or close one`,
      );
    // The protocol: an unknown service is told SERVICE_UNKNOWN and the call stays open, not failed.
    const w: Watch = { stream, unknown: name !== '' && name !== RLS_SERVICE, last: undefined };
    stream.respond(ANSWER_HEADERS, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers(STOPPING_TRAILERS));
    stream.once('close', () => {
      this.watches.delete(w);
      if (this.watches.size === 0) this.stopPolling();
    });
    this.watches.add(w);
    if (this.closing) {
      send(w, w.unknown ? SERVICE_UNKNOWN : NOT_SERVING); // a call that slipped in before the GOAWAY must not hold the close open
      return void stream.end();
    }
    if (w.unknown) return send(w, SERVICE_UNKNOWN);
    this.poll ??= setInterval(() => this.askServing(), this.options.watchEveryMs).unref();
    this.askServing();
  };

  /** Asks `serving` once (never twice at a time) and tells every Watch whose status it changes. */
  private askServing(): void {
    if (this.asking) return;
    this.asking = true;
    this.options.serving().then(
      (ok) => this.tellAll(ok ? SERVING : NOT_SERVING),
      () => this.tellAll(NOT_SERVING),
    );
  }

  private tellAll(status: Buffer): void {
    this.asking = false;
    if (this.closing) return; // every Watch has been told NOT_SERVING and ended
    for (const w of this.watches) if (!w.unknown) send(w, status);
  }

  stopPolling(): void {
    clearInterval(this.poll);
    this.poll = undefined;
  }

  /** Every open Watch hears NOT_SERVING, then its call ends UNAVAILABLE, so that the server can close. */
  endWatches(): void {
    this.closing = true;
    this.stopPolling();
    for (const w of this.watches) {
      if (!w.unknown) send(w, NOT_SERVING);
      if (!w.stream.destroyed && !w.stream.closed) w.stream.end();
    }
  }
}

function send(w: Watch, status: Buffer): void {
  if (w.last === status || w.stream.destroyed || w.stream.closed) return;
  w.last = status;
  w.stream.write(status);
}
