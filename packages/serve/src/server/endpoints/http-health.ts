/**
 * /healthz, /readyz and /healthcheck (envoyproxy/ratelimit's path for /readyz's question), answered on the
 * decision port and the admin port alike: probes need no token.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { answerError, send, TEXT_HEADERS } from './http-answer.js';

export interface Health {
  readonly ready: () => Promise<boolean>;
  /** True once shutdown began: both answer 503 so load balancers drain us. */
  readonly stopping: () => boolean;
}

/** Answers `path` if it is a health path (true), else leaves the response alone (false). */
export function answerHealth(res: ServerResponse, path: string, health: Health, log: Logger): boolean {
  if (path === '/healthz') {
    send(res, health.stopping() ? 503 : 200, health.stopping() ? 'stopping\n' : 'ok\n', TEXT_HEADERS);
    return true;
  }
  if (path !== '/readyz' && path !== '/healthcheck') return false;
  if (health.stopping()) {
    send(res, 503, 'stopping\n', TEXT_HEADERS);
    return true;
  }
  health.ready().then(
    (ok) => send(res, ok ? 200 : 503, ok ? 'ready\n' : 'the store is not answering\n', TEXT_HEADERS),
    (e) => answerError(res, log, e),
  );
  return true;
}
