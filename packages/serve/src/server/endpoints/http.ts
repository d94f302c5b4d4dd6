/**
 * The decision port of `sluice serve` on bare node:http (a framework would cost more than a decision):
 * POST /json and /v1/check, GET /nginx/<domain> for auth_request, and /healthz, /readyz, /healthcheck. The
 * dashboard and /metrics are on the admin port (admin.ts). Each step is its own part: accepting
 * (http-accept.ts), reading and decoding a body (http-body.ts, http-decode.ts), deciding (the service) and
 * answering (http-answer.ts); this file routes between them.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { acceptWithin, serverOptions } from './http-accept.js';
import type { HttpLimits } from './http-accept.js';
import { answerDecision, answerError, JSON_HEADERS, problem, send } from './http-answer.js';
import { readBody } from './http-body.js';
import type { BodyKind, ServeRequest } from './http-body.js';
import { decodeBody } from './http-decode.js';
import { answerHealth } from './http-health.js';
import { nginxRequest } from '../codecs/nginx-request.js';
import type { RateLimitService } from '../service.js';
import type { RlsRequest, RlsResponse } from '../codecs/rls-types.js';

export { ServeRequest } from './http-body.js';
export type { HttpLimits } from './http-accept.js';

export interface HttpDeps {
  readonly service: RateLimitService;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  readonly ready: () => Promise<boolean>;
  /** True once shutdown began: /healthz and /readyz then answer 503 so load balancers drain us. */
  readonly stopping: () => boolean;
  /** Connection limits; Node's own defaults (60 s for headers, 300 s for a request, no cap) when absent. */
  readonly limits?: HttpLimits;
}

const ROUTES =
  'POST /json, POST /v1/check, GET /nginx/<domain>, /healthz, /readyz (or /healthcheck); the dashboard and /metrics are on the admin port (--admin-port)';

/** The route a decision came in on, which says how it is answered. */
type Route = BodyKind | 'nginx';

/**
 * Decides and answers. Synchronous with the memory store (no Promise, no tick), so /json is answered in the
 * parser's own pass over the socket's bytes.
 */
export function decide(
  service: RateLimitService,
  log: Logger,
  res: ServerResponse,
  route: Route,
  rq: RlsRequest,
): void {
  try {
    const answered = service.shouldRateLimit(rq);
    if (answered instanceof Promise)
      answered.then(
        (r) => answerRoute(res, route, r),
        (e) => answerError(res, log, e),
      );
    else answerRoute(res, route, answered);
  } catch (e) {
    answerError(res, log, e);
  }
}

function answerRoute(res: ServerResponse, route: Route, r: RlsResponse): void {
  if (route === 'nginx') answerNginx(res, r);
  else answerDecision(res, route, r);
}

/** nginx auth_request: 200 passes; 403 (mapped to 429 by `error_page 403 = @ratelimited`) denies. */
function answerNginx(res: ServerResponse, r: RlsResponse): void {
  const h: Record<string, string> = {};
  for (const [k, v] of r.headers) h[k] = v;
  send(res, r.overallCode === 'OK' ? 200 : 403, '', h);
}

export function createHttpServer(deps: HttpDeps): Server {
  const { service, log } = deps;
  const health = { ready: deps.ready, stopping: deps.stopping };

  /** The one configured domain, which /v1/check may leave out; undefined with several. */
  function onlyDomain(): string | undefined {
    const domains = service.rules.config.domains;
    return domains.size === 1 ? domains.keys().next().value : undefined;
  }

  /** A /json or /v1/check body's text: decoded, then decided. */
  function decideBody(res: ServerResponse, kind: BodyKind, text: string | undefined): void {
    if (text === undefined) return problem(res, 413, `the body is larger than ${deps.maxBodyBytes} bytes`);
    let rq: RlsRequest;
    try {
      // Only /v1/check may leave its domain out: /json does not look up the configured domains (a Map
      // iterator and its result per request).
      rq = decodeBody(kind, text, kind === 'check' ? onlyDomain() : undefined);
    } catch (e) {
      return answerError(res, log, e);
    }
    decide(service, log, res, kind, rq);
  }

  function post(req: ServeRequest, res: ServerResponse, method: string, path: string, kind: BodyKind): void {
    if (method !== 'POST')
      return send(res, 405, JSON.stringify({ error: `${path} takes POST` }), { ...JSON_HEADERS, allow: 'POST' });
    readBody(req, res, kind, deps.maxBodyBytes, decideBody);
  }

  function nginx(req: IncomingMessage, res: ServerResponse, path: string): void {
    let domainName: string;
    try {
      domainName = decodeURIComponent(path.slice('/nginx/'.length));
    } catch {
      return problem(res, 400, `the domain in ${JSON.stringify(path)} is not valid percent-encoding`);
    }
    const domain = service.rules.domain(domainName);
    if (domain === undefined) {
      // As the RLS answers it: OK (pass), unless --strict-domains.
      service.unknownDomainRequests++;
      return service.strictDomains ? problem(res, 404, `unknown domain '${domainName}'`) : send(res, 200, '', {});
    }
    const rq = nginxRequest(domainName, domain.httpDescriptors, req.headers);
    if (rq === undefined) return send(res, 200, '', {});
    decide(service, log, res, 'nginx', rq);
  }

  const options = serverOptions(deps.limits);
  const server = createServer(options, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    if (path === '/json') return post(req, res, method, path, 'json');
    if (path === '/v1/check') return post(req, res, method, path, 'check');
    if (path.startsWith('/nginx/')) return nginx(req, res, path);
    if (answerHealth(res, path, health, log)) return;
    problem(res, 404, `no route ${method} ${path}; this port serves ${ROUTES}`);
  });
  acceptWithin(server, options, log);
  return server;
}
