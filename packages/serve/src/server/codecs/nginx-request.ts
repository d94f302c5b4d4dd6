/**
 * Decoding an nginx auth_request subrequest: the domain's `http_descriptors` read from its headers, as
 * Envoy's request_headers action builds descriptors. A descriptor missing a header is skipped; none left:
 * nothing to decide (undefined), and the request passes.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestDescriptor, RlsRequest } from './rls-types.js';

/** nginx endpoint: one descriptor entry taken from a request header. */
export interface HeaderEntry {
  readonly key: string;
  /** Lower-case header name. */
  readonly header: string;
}

export function nginxRequest(
  domain: string,
  specs: readonly (readonly HeaderEntry[])[],
  headers: IncomingHttpHeaders,
): RlsRequest | undefined {
  const descriptors: RequestDescriptor[] = [];
  for (const spec of specs) {
    const entries = [];
    for (const e of spec) {
      const v = headers[e.header];
      const value = Array.isArray(v) ? v[0] : v;
      if (value === undefined || value === '') break; // as Envoy's request_headers action: skip the descriptor
      entries.push({ key: e.key, value });
    }
    if (entries.length === spec.length) descriptors.push({ entries });
  }
  // hits_addend 0 is Envoy's unset: one hit per subrequest.
  return descriptors.length === 0 ? undefined : { domain, descriptors, hitsAddend: 0 };
}
