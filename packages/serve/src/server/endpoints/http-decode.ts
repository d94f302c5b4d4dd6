/**
 * Decoding a decision body: /json's compact form by the fast scanner first, then any JSON (depth-checked
 * before JSON.parse meets it) by the full decoders. Text in, a request out, or a BadRequest naming the problem.
 */
import type { BodyKind } from './http-body.js';
import { checkJsonDepth, decodeCheck, decodeRlsJson, decodeRlsJsonFast } from '../codecs/json-codec.js';
import { REQUEST_BOUNDS } from '../codecs/rls-request.js';
import { BadRequest } from '../codecs/rls-types.js';
import type { RlsRequest } from '../codecs/rls-types.js';

/** `onlyDomain`: the one configured domain, which /v1/check may leave out. */
export function decodeBody(kind: BodyKind, text: string, onlyDomain: string | undefined): RlsRequest {
  const fast = kind === 'json' ? decodeRlsJsonFast(text) : undefined;
  if (fast !== undefined) return fast;
  // Measured before JSON.parse, and before anything recursive (JSON.stringify in a message) meets it.
  checkJsonDepth(text, REQUEST_BOUNDS.maxJsonDepth);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new BadRequest(`the body is not valid JSON: ${(e as Error).message}`);
  }
  return kind === 'json' ? decodeRlsJson(parsed) : decodeCheck(parsed, onlyDomain);
}
