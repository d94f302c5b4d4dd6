/**
 * Rate-limit response headers in each style, rendered from a Decision and the limiter's policies:
 * - `legacy`: X-RateLimit-Limit, -Remaining, -Used, -Reset (epoch seconds), -Resource, as GitHub sends them;
 * - `draft-6`: RateLimit-Policy `10;w=60` + RateLimit-Limit, -Remaining, -Reset (delta seconds);
 * - `draft-7`: RateLimit-Policy `10;w=60` + RateLimit `limit=10, remaining=9, reset=42`;
 * - `draft-8`: RateLimit-Policy listing every policy `"name";q=10;w=60, ...` + RateLimit `"name";r=9;t=42`
 *   (the wire format of draft-ietf-httpapi-ratelimit-headers-08 through -10);
 * - `none`.
 * Names are sent in lower case, as HTTP/2 requires and HTTP/1.1 allows; it also takes Node's fastest path.
 * The dynamic values describe the deciding (most restrictive) policy. On a denial the reset value is the
 * Retry-After value, as the drafts ask (Retry-After must not point earlier than the reset).
 */
import { SluiceError, show } from '../core/errors.js';
import type { LimitOverride } from '../core/override.js';
import type { Decision, Policy } from '../core/types.js';

export type HeaderStyle = 'legacy' | 'draft-6' | 'draft-7' | 'draft-8' | 'none';
export const HEADER_STYLES: readonly HeaderStyle[] = ['legacy', 'draft-6', 'draft-7', 'draft-8', 'none'];

/** Where headers go: a Node ServerResponse as it is; adapters wrap `reply.header` or `c.header` in one. */
export interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
  /**
   * Optional: sets a field whose name is a lower-case token and whose value holds only characters a field
   * value may hold, both checked where they were built, so the target may skip its own validation.
   * sluice sends every rate-limit field through it except a policy name it could not check up front.
   */
  setTrustedHeader?(name: string, value: string): unknown;
}

function put(to: HeaderTarget, name: string, value: string): void {
  if (to.setTrustedHeader !== undefined) to.setTrustedHeader(name, value);
  else to.setHeader(name, value);
}

/** What Node accepts in a field value (its checkInvalidHeaderChar), checked once per policy name. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Whole seconds, rounded up: Retry-After and every reset value. */
export function ceilSeconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** The Retry-After value of a denied decision: whole seconds, rounded up (at least 1). */
export function retryAfterSeconds(d: Decision): number {
  return Math.max(1, ceilSeconds(d.retryAfterMs));
}

/** Seconds until the deciding policy resets; on a denial, until the retry can pass. */
function resetSeconds(d: Decision): number {
  return d.allowed ? ceilSeconds(d.resetAfterMs) : retryAfterSeconds(d);
}

/** A structured-field sf-string: printable ASCII, `"` and `\` escaped. */
function sfString(name: string, style: HeaderStyle): string {
  if (!/^[\x20-\x7e]*$/.test(name)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `policy name ${show(name)} cannot be sent in '${style}' headers: names there must be printable ASCII`,
    );
  }
  return `"${name.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The window in whole seconds, rounded up (never 0): a sub-second window is stated conservatively. */
function windowSeconds(p: Policy): number {
  return Math.max(1, ceilSeconds(p.windowMs));
}

interface PolicyText {
  readonly limit: number;
  /** draft-6/7 item: `10;w=60` */
  readonly short: string;
  /** draft-7 RateLimit value up to the remaining count: `limit=10, remaining=` */
  readonly draft7: string;
  /** The policy name is a valid field value (legacy's X-RateLimit-Resource may skip validation). */
  readonly nameIsFieldValue: boolean;
  /** draft-8 item: `"name";q=10;w=60` */
  readonly named: string;
  /** draft-8 RateLimit item prefix: `"name";r=` */
  readonly prefix: string;
  /** draft-8 policy item up to the quota: `"name";q=` */
  readonly id: string;
  /** The window in seconds; undefined for a concurrency policy. */
  readonly w: number | undefined;
}

/**
 * Everything about a limiter's policies that does not change per request, computed once: the static
 * RateLimit-Policy texts. A concurrency policy is stated with `qu="concurrent-requests"` and no window.
 */
export class HeaderRenderer {
  readonly style: HeaderStyle;
  private readonly byName = new Map<string, PolicyText>();
  /** draft-8: every policy, in the order given. */
  private readonly allPolicies: string;

  constructor(style: HeaderStyle, policies: readonly Policy[]) {
    this.style = style;
    const all: string[] = [];
    for (const p of policies) {
      const concurrent = p.algorithm === 'concurrency';
      const short = concurrent ? `${p.limit}` : `${p.limit};w=${windowSeconds(p)}`;
      const id = style === 'draft-8' ? sfString(p.name, style) : JSON.stringify(p.name);
      const named = concurrent
        ? `${id};q=${p.limit};qu="concurrent-requests"`
        : `${id};q=${p.limit};w=${windowSeconds(p)}`;
      this.byName.set(p.name, {
        limit: p.limit,
        short,
        draft7: `limit=${p.limit}, remaining=`,
        nameIsFieldValue: FIELD_VALUE.test(p.name),
        named,
        prefix: `${id};r=`,
        id,
        w: concurrent ? undefined : windowSeconds(p),
      });
      all.push(named);
    }
    this.allPolicies = all.join(', ');
  }

  /**
   * Writes the headers of `style` for `d`. `nowMs` (wall clock; default now) places the legacy epoch reset.
   * Every value is built from numbers and from policy texts checked in the constructor, so it goes through
   * setTrustedHeader where the target has one: on node:http, Node's per-field validation and its
   * dictionary-mode header store cost more than the decision (see node.ts).
   */
  write(d: Decision, to: HeaderTarget, nowMs?: number, limits?: Readonly<Record<string, LimitOverride>>): void {
    if (limits !== undefined) return this.writeWith(d, to, nowMs, limits);
    switch (this.style) {
      case 'none':
        return;
      case 'legacy': {
        put(to, 'x-ratelimit-limit', `${d.limit}`);
        put(to, 'x-ratelimit-remaining', `${d.remaining}`);
        put(to, 'x-ratelimit-used', `${Math.max(0, d.limit - d.remaining)}`);
        put(
          to,
          'x-ratelimit-reset',
          `${Math.ceil(((nowMs ?? Date.now()) + (d.allowed ? d.resetAfterMs : d.retryAfterMs)) / 1000)}`,
        );
        if (this.byName.get(d.policy)?.nameIsFieldValue === true) put(to, 'x-ratelimit-resource', d.policy);
        else to.setHeader('x-ratelimit-resource', d.policy);
        return;
      }
      case 'draft-6': {
        const text = this.byName.get(d.policy);
        if (text !== undefined) put(to, 'ratelimit-policy', text.short);
        put(to, 'ratelimit-limit', `${d.limit}`);
        put(to, 'ratelimit-remaining', `${d.remaining}`);
        put(to, 'ratelimit-reset', `${resetSeconds(d)}`);
        return;
      }
      case 'draft-7': {
        const text = this.byName.get(d.policy);
        if (text !== undefined) put(to, 'ratelimit-policy', text.short);
        const head = text !== undefined && text.limit === d.limit ? text.draft7 : `limit=${d.limit}, remaining=`;
        put(to, 'ratelimit', `${head}${d.remaining}, reset=${resetSeconds(d)}`);
        return;
      }
      case 'draft-8': {
        const text = this.byName.get(d.policy);
        put(to, 'ratelimit-policy', this.allPolicies);
        if (text !== undefined) put(to, 'ratelimit', `${text.prefix}${d.remaining};t=${resetSeconds(d)}`);
        return;
      }
    }
  }

  /** `write` for a request decided with per-call limits: the policy fields state the limits it had. */
  private writeWith(
    d: Decision,
    to: HeaderTarget,
    nowMs: number | undefined,
    limits: Readonly<Record<string, LimitOverride>>,
  ): void {
    const quota = (name: string, text: PolicyText) => {
      const l = limits[name];
      return l === undefined ? text.limit : typeof l === 'number' ? l : l.limit;
    };
    const item = (text: PolicyText, q: number) => (text.w === undefined ? `${q}` : `${q};w=${text.w}`);
    switch (this.style) {
      case 'none':
      case 'legacy':
        return this.write(d, to, nowMs);
      case 'draft-6':
      case 'draft-7': {
        const text = this.byName.get(d.policy);
        if (text !== undefined) put(to, 'ratelimit-policy', item(text, quota(d.policy, text)));
        if (this.style === 'draft-6') {
          put(to, 'ratelimit-limit', `${d.limit}`);
          put(to, 'ratelimit-remaining', `${d.remaining}`);
          put(to, 'ratelimit-reset', `${resetSeconds(d)}`);
        } else put(to, 'ratelimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${resetSeconds(d)}`);
        return;
      }
      case 'draft-8': {
        const all: string[] = [];
        for (const [name, text] of this.byName) {
          const q = quota(name, text);
          all.push(
            text.w === undefined ? `${text.id};q=${q};qu="concurrent-requests"` : `${text.id};q=${q};w=${text.w}`,
          );
        }
        put(to, 'ratelimit-policy', all.join(', '));
        const text = this.byName.get(d.policy);
        if (text !== undefined) put(to, 'ratelimit', `${text.prefix}${d.remaining};t=${resetSeconds(d)}`);
        return;
      }
    }
  }
}
