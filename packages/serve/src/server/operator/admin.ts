/**
 * The admin listener of `sluice serve` (--admin-port, as Envoy ratelimit's DEBUG_PORT): the dashboard page,
 * its /events stream and /config, and /metrics, apart from the decision port so that a dashboard's
 * long-lived streams or a heavy scrape never take a connection a decision needs. With --admin-token every
 * request but health must carry it, as `Authorization: Bearer <token>` (Prometheus' bearer_token) or Basic
 * with the token as the password (what a browser prompts for, and then sends on the page's own requests).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { isIP } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Dashboard } from './dashboard.js';
import { acceptWithin, serverOptions } from '../endpoints/http-accept.js';
import type { HttpLimits } from '../endpoints/http-accept.js';
import { answerError, problem, send } from '../endpoints/http-answer.js';
import { answerHealth } from '../endpoints/http-health.js';
import type { Health } from '../endpoints/http-health.js';

export interface AdminDeps {
  readonly dashboard: Dashboard;
  readonly metrics: Registry;
  readonly log: Logger;
  readonly health: Health;
  /** The token every admin request must carry; undefined: none (the listener should then be on loopback). */
  readonly token: string | undefined;
  /** Host names answered besides addresses and localhost (--admin-hosts); lower-case. */
  readonly hosts?: readonly string[];
  readonly limits?: HttpLimits;
}

/**
 * Whether the admin port answers a request with this `Host`: an IP address, `localhost` (or a name under
 * it, which browsers resolve to loopback themselves), or a name the operator listed. A page that got an
 * operator's browser to resolve its own name to 127.0.0.1 (DNS rebinding) sends its own name, and is
 * refused, token or not. No Host at all (HTTP/1.0) is not a browser's request: answered.
 */
export function adminHostAllowed(host: string | undefined, listed: readonly string[] = []): boolean {
  if (host === undefined) return true;
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) {
    const end = name.indexOf(']');
    return end > 0 && /^(:\d*)?$/.test(name.slice(end + 1)) && isIP(name.slice(1, end)) === 6;
  }
  const colon = name.lastIndexOf(':');
  if (colon >= 0) {
    if (!/^\d*$/.test(name.slice(colon + 1))) return false;
    name = name.slice(0, colon);
  }
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === '') return false;
  return isIP(name) === 4 || name === 'localhost' || name.endsWith('.localhost') || listed.includes(name);
}

const CHALLENGE = {
  'content-type': 'application/json',
  'www-authenticate': 'Basic realm="sluice admin", charset="UTF-8"',
};

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
  const options = serverOptions(deps.limits);
  const server = createServer(options, (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    // Health says nothing worth a rebinding attack, and a balancer's probe may name the service as it likes.
    if (answerHealth(res, path, deps.health, log)) return;
    if (!adminHostAllowed(req.headers.host, deps.hosts)) {
      return problem(
        res,
        421,
        `the admin port does not answer Host ${JSON.stringify(req.headers.host)}: only IP addresses, localhost and the names of --admin-hosts (DNS rebinding)`,
      );
    }
    if (token !== undefined && !carriesToken(req.headers.authorization, token)) {
      return problem(
        res,
        401,
        'the admin port needs the token of --admin-token: Authorization: Bearer <token>, or Basic with the token as the password',
        CHALLENGE,
      );
    }
    switch (path) {
      case '/':
        return send(res, 200, dashboard.page(), { 'content-type': 'text/html; charset=utf-8' });
      case '/events':
        return dashboard.subscribe(req, res);
      case '/config':
        return send(res, 200, JSON.stringify(dashboard.configView()));
      case '/metrics':
        metrics.metrics().then(
          (text) => send(res, 200, text, { 'content-type': metrics.contentType }),
          (e) => answerError(res, log, e),
        );
        return;
    }
    problem(
      res,
      404,
      `no route ${req.method ?? 'GET'} ${path} on the admin port; it serves / (the dashboard), /events, /config, /metrics, /healthz and /readyz`,
    );
  });
  acceptWithin(server, options, log);
  return server;
}
