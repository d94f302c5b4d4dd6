/**
 * CAPTCHA verification for the ladder's 'captcha' challenge: one provider interface and adapters for the
 * three siteverify services, which share one protocol: POST form fields `secret`, `response` and optionally
 * `remoteip`; the answer is JSON with `success`, `error-codes`, `hostname`, and for reCAPTCHA v3 `score`
 * and `action`. Every failure to get a clear yes (timeout, network error, bad JSON, HTTP error) is a no:
 * a CAPTCHA that cannot be checked must not wave an attacker through.
 */
import { show, SluiceError } from 'sluice/kit';

export interface CaptchaResult {
  readonly success: boolean;
  /** The provider's error codes, or ours: 'missing-input-response', 'timeout', 'network-error', 'bad-response', 'hostname-mismatch', 'action-mismatch', 'score-too-low'. */
  readonly errorCodes: readonly string[];
  readonly hostname: string | undefined;
  /** reCAPTCHA v3 (and hCaptcha Enterprise) only. */
  readonly score: number | undefined;
}

export interface CaptchaProvider {
  readonly name: string;
  /** Verifies a token the client sent; `remoteIp` is passed on to the provider when given. */
  verify(token: string, remoteIp?: string): Promise<CaptchaResult>;
}

export interface SiteverifyOptions {
  /** The provider's server-side secret. */
  secret: string;
  /** Overrides the provider's endpoint (tests point it at a local server). */
  url?: string;
  /** Accept only tokens solved on this hostname. */
  expectedHostname?: string;
  /** reCAPTCHA v3 and Turnstile: accept only this action. */
  expectedAction?: string;
  /** reCAPTCHA v3: the lowest score accepted (Google suggests 0.5). */
  minScore?: number;
  /** Per-call timeout. Default 5000 ms. */
  timeoutMs?: number;
  /** The fetch to use; default the global one (Node 18+). */
  fetch?: typeof fetch;
}

export const SITEVERIFY_URLS = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
  recaptcha: 'https://www.google.com/recaptcha/api/siteverify',
} as const;

const failed = (code: string): CaptchaResult => ({
  success: false,
  errorCodes: [code],
  hostname: undefined,
  score: undefined,
});

/** A siteverify-protocol provider: Turnstile, hCaptcha and reCAPTCHA differ only in their URL. */
export class SiteverifyCaptcha implements CaptchaProvider {
  readonly name: string;
  private readonly o: SiteverifyOptions;
  private readonly url: string;

  constructor(name: keyof typeof SITEVERIFY_URLS, options: SiteverifyOptions) {
    if (
      typeof options !== 'object' ||
      options === null ||
      typeof options.secret !== 'string' ||
      options.secret.length === 0
    ) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${name} 'secret' must be the provider's non-empty secret key, got ${show(options?.secret)}`,
      );
    }
    if (
      options.minScore !== undefined &&
      (typeof options.minScore !== 'number' || !(options.minScore >= 0 && options.minScore <= 1))
    ) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `${name} 'minScore' must be a number from 0 to 1, got ${show(options.minScore)}`,
      );
    }
    this.name = name;
    this.o = options;
    this.url = options.url ?? SITEVERIFY_URLS[name];
  }

  async verify(token: string, remoteIp?: string): Promise<CaptchaResult> {
    if (typeof token !== 'string' || token.length === 0) return failed('missing-input-response');
    const form = new URLSearchParams({ secret: this.o.secret, response: token });
    if (remoteIp !== undefined) form.set('remoteip', remoteIp);
    let body: unknown;
    try {
      const response = await (this.o.fetch ?? fetch)(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 5000),
      });
      if (!response.ok) return failed('bad-response');
      body = await response.json();
    } catch (error) {
      const name = (error as Error)?.name;
      return failed(
        name === 'TimeoutError' || name === 'AbortError'
          ? 'timeout'
          : name === 'SyntaxError'
            ? 'bad-response'
            : 'network-error',
      );
    }
    if (typeof body !== 'object' || body === null || typeof (body as { success?: unknown }).success !== 'boolean')
      return failed('bad-response');
    const b = body as {
      success: boolean;
      'error-codes'?: unknown;
      hostname?: unknown;
      score?: unknown;
      action?: unknown;
    };
    const errorCodes = Array.isArray(b['error-codes'])
      ? b['error-codes'].filter((c): c is string => typeof c === 'string')
      : [];
    const hostname = typeof b.hostname === 'string' ? b.hostname : undefined;
    const score = typeof b.score === 'number' ? b.score : undefined;
    const result = (success: boolean, extra?: string): CaptchaResult => ({
      success,
      errorCodes: extra === undefined ? errorCodes : [...errorCodes, extra],
      hostname,
      score,
    });
    if (!b.success) return result(false);
    if (this.o.expectedHostname !== undefined && hostname !== this.o.expectedHostname)
      return result(false, 'hostname-mismatch');
    if (this.o.expectedAction !== undefined && b.action !== this.o.expectedAction)
      return result(false, 'action-mismatch');
    if (this.o.minScore !== undefined && (score === undefined || score < this.o.minScore))
      return result(false, 'score-too-low');
    return result(true);
  }
}

/** Cloudflare Turnstile. */
export const turnstile = (options: SiteverifyOptions) => new SiteverifyCaptcha('turnstile', options);
/** hCaptcha. */
export const hcaptcha = (options: SiteverifyOptions) => new SiteverifyCaptcha('hcaptcha', options);
/** Google reCAPTCHA (v2, or v3 with `minScore` and `expectedAction`). */
export const recaptcha = (options: SiteverifyOptions) => new SiteverifyCaptcha('recaptcha', options);
