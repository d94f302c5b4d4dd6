/**
 * The admin listener of `sluice serve` (--admin-port, as Envoy ratelimit's DEBUG_PORT): the dashboard page,
 * its /events stream and /config, and /metrics, apart from the decision port so that a dashboard's
 * long-lived streams or a heavy scrape never take a connection a decision needs. With --admin-token every
 * request but health must carry it, as `Authorization: Bearer <token>` (Prometheus' bearer_token) or Basic
 * with the token as the password (what a browser prompts for, and then sends on the page's own requests).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Dashboard } from './dashboard.js';
import { acceptWithin, serverOptions } from './http-accept.js';
import type { HttpLimits } from './http-accept.js';
import { answerError, problem, send } from './http-answer.js';
import { answerHealth } from './http-health.js';
import type { Health } from './http-health.js';

export interface AdminDeps {
  readonly dashboard: Dashboard;
  readonly metrics: Registry;
  readonly log: Logger;
  readonly health: Health;
  /** The token every admin request must carry; undefined: none (the listener should then be on loopback). */
  readonly token: string | undefined;
  readonly limits?: HttpLimits;
}

const CHALLENGE = { 'content-type': 'application/json', 'www-authenticate': 'Basic realm="sluice admin", charset="UTF-8"' };

/**
 * Whether an Authorization header carries `token`, compared in constant time: both sides are hashed first,
 * so neither the comparison nor its length tells anything about the token.
 */
export function carriesToken(authorization: string | undefined, token: string): boolean {
  if (authorization === undefined) return false;
  const space = authorization.indexOf(' ');
  if (space < 0) return false;
  const scheme = authorization.slice(0, space).toLowerCase();
  const value = authorization.slice(space + 1).trim();
  let given: string;
  if (scheme === 'bearer') given = value;
  else if (scheme === 'basic') {
    const pair = Buffer.from(value, 'base64').toString('utf8');
    given = pair.slice(pair.indexOf(':') + 1);
  } else return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(token));
}

export function createAdminServer(deps: AdminDeps): Server {
  const { dashboard, metrics, log, token } = deps;
  const server = createServer(serverOptions(deps.limits), (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (answerHealth(res, path, deps.health, log)) return;
    if (token !== undefined && !carriesToken(req.headers.authorization, token)) {
      return problem(res, 401, 'the admin port needs the token of --admin-token: Authorization: Bearer <token>, or Basic with the token as the password', CHALLENGE);
    }
    switch (path) {
      case '/':
        return send(res, 200, dashboard.page(), { 'content-type': 'text/html; charset=utf-8' });
      case '/events':
        return dashboard.subscribe(req, res);
      case '/config':
        return send(res, 200, JSON.stringify(dashboard.configView()));
      case '/metrics':
        metrics.metrics().then((text) => send(res, 200, text, { 'content-type': metrics.contentType }), (e) => answerError(res, log, e));
        return;
    }
    problem(res, 404, `no route ${req.method ?? 'GET'} ${path} on the admin port; it serves / (the dashboard), /events, /config, /metrics, /healthz and /readyz`);
  });
  acceptWithin(server, deps.limits, log);
  return server;
}
