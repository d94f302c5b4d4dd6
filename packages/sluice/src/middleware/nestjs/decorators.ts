/** The decorators of sluice/nestjs: a rule per controller or route, skipping, and the decision as a parameter. */
import { createParamDecorator, SetMetadata, type CustomDecorator, type ExecutionContext } from '@nestjs/common';
import { show } from '../../core/errors.js';
import { compilePolicies } from '../../core/index.js';
import type { PolicyOptions } from '../../core/types.js';
import type { LimitRule } from '../../http/options.js';
import { fail } from '../../http/rule.js';
import type { NestRequest } from './options.js';

export const RATE_LIMIT_RULE = 'sluice:rate-limit-rule';
export const SKIP_RATE_LIMIT = 'sluice:skip-rate-limit';

const RULE_FIELDS = new Set(['policy', 'policies', 'limiter', 'key', 'cost', 'limit']);

/**
 * Limits a controller (every route in it) or one route by its own rule: `policy`/`policies`/`limiter`,
 * `key`, `cost`, `limit`, as in the other adapters' options. A route's rule is laid over its controller's,
 * field by field; a rule with its own policy has its own state (keys prefixed by `Controller` or
 * `Controller.handler`), one that only sets `key`, `cost` or `limit` decides on the policy above it.
 * For example, five logins a minute per client, on their own state:
 * `@RateLimit({ policy: { algorithm: 'sliding-log', limit: 5, window: '1m' } })` above `@Post('login')`.
 */
export function RateLimit(rule: LimitRule<NestRequest>): CustomDecorator<string> {
  if (typeof rule !== 'object' || rule === null)
    fail(
      `@RateLimit() takes a rule object such as { policy: { algorithm: 'gcra', limit: 10, window: '1m' } }, got ${show(rule)}`,
    );
  for (const field of Object.keys(rule)) {
    if (!RULE_FIELDS.has(field))
      fail(`@RateLimit(): unknown field '${field}'; known fields are ${[...RULE_FIELDS].join(', ')}`);
  }
  const given = [rule.policy, rule.policies, rule.limiter].filter((x) => x !== undefined).length;
  if (given > 1) fail(`@RateLimit(): give at most one of 'policy', 'policies' or 'limiter'`);
  // Policies are checked here, when the class is defined, not at the first request.
  if (rule.policy !== undefined || rule.policies !== undefined)
    compilePolicies(rule.policies ?? [rule.policy as PolicyOptions]);
  return SetMetadata(RATE_LIMIT_RULE, rule);
}

/** Lets a controller's or a route's requests through unlimited and uncounted. */
export function SkipRateLimit(): CustomDecorator<string> {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}

/** Injects the decision the guard made for this request (`req.rateLimit`; undefined when none decided it). */
export const RateLimitDecision = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext) => (ctx.switchToHttp().getRequest() as { rateLimit?: unknown }).rateLimit,
);
