/**
 * A refused request is an HttpException, as in any Nest guard, so that the application's exception
 * filters see it; the module's filter sends it as the other adapters do (status, problem+json body, no body
 * for HEAD), on either platform. Headers were set before it was thrown.
 */
import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { LimitedResponse } from '../../http/engine.js';
import { PROBLEM_CONTENT_TYPE } from '../../http/problem.js';
import type { NestRequest, NestResponse } from './options.js';

export class RateLimitException extends HttpException {
  constructor(readonly limited: LimitedResponse) {
    super(limited.problem, limited.status);
  }
}

interface FastifyReplyLike {
  raw: unknown;
  code(status: number): FastifyReplyLike;
  type(contentType: string): FastifyReplyLike;
  send(body?: Buffer): unknown;
}

export class RateLimitExceptionFilter implements ExceptionFilter<RateLimitException> {
  catch(exception: RateLimitException, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<NestRequest>();
    const res = http.getResponse<NestResponse>();
    const { status, problem } = exception.limited;
    // A Buffer, so that neither platform adds a charset parameter (RFC 8259 JSON has none).
    const body = req.method === 'HEAD' ? undefined : Buffer.from(JSON.stringify(problem));
    if ((res as FastifyReplyLike).raw !== undefined) {
      (res as FastifyReplyLike).code(status).type(PROBLEM_CONTENT_TYPE).send(body);
      return;
    }
    res.statusCode = status;
    res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
    res.setHeader('Content-Length', body === undefined ? Buffer.byteLength(JSON.stringify(problem)) : body.length);
    res.end(body);
  }
}
Catch(RateLimitException)(RateLimitExceptionFilter);
