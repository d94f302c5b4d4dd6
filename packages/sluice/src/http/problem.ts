/**
 * The body of a limited response: RFC 9457 problem details (application/problem+json), with the
 * "quota-exceeded" problem type and `violated-policies` member of draft-ietf-httpapi-ratelimit-headers-10.
 */
import type { Decision } from '../core/types.js';
import { retryAfterSeconds } from './headers.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The deciding policy: the one whose retry is furthest away. */
  'violated-policies': string[];
}

/** The problem details of a denied decision, for a response of `status`. */
export function problemDetails(d: Decision, status: number): ProblemDetails {
  const seconds = retryAfterSeconds(d);
  return {
    type: QUOTA_EXCEEDED,
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status,
    detail: `Rate limit "${d.policy}" exceeded; retry after ${seconds} second${seconds === 1 ? '' : 's'}.`,
    'violated-policies': [d.policy],
  };
}

/** The problem details of a deny-listed request. */
export function forbiddenProblem(status: number): ProblemDetails {
  return {
    type: 'about:blank',
    title: 'Forbidden',
    status,
    detail: 'The client is not allowed to make this request.',
    'violated-policies': [],
  };
}
