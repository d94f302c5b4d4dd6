/**
 * One error class for everything sluice rejects. Every message names the field and quotes the value, and
 * every error carries a stable `code` plus a `help` pointer into docs/errors.md.
 */
import { brandOf, isInstance, SLUICE_VERSION } from './brand.js';

export type SluiceErrorCode =
  | 'ERR_SLUICE_INVALID_POLICY'
  | 'ERR_SLUICE_INVALID_OPTION'
  | 'ERR_SLUICE_INVALID_COST'
  | 'ERR_SLUICE_INVALID_KEY'
  | 'ERR_SLUICE_COST_EXCEEDS_CAPACITY'
  | 'ERR_SLUICE_SYNC_UNSUPPORTED'
  | 'ERR_SLUICE_QUEUE_FULL'
  | 'ERR_SLUICE_QUEUE_TIMEOUT'
  | 'ERR_SLUICE_INVALID_IP'
  | 'ERR_SLUICE_INVALID_ATTEMPT'
  | 'ERR_SLUICE_GUARD_SECRET'
  | 'ERR_SLUICE_NO_CLIENT_ADDRESS'
  | 'ERR_SLUICE_INVALID_GRAPHQL'
  | 'ERR_SLUICE_STORE_UNAVAILABLE'
  | 'ERR_SLUICE_OPENTELEMETRY_MISSING';

const SLUICE_ERROR = brandOf('SluiceError');

export class SluiceError extends Error {
  readonly code: SluiceErrorCode;
  readonly help: string;

  /** An error from another copy of sluice (require and import each load one) is a SluiceError too. */
  static override [Symbol.hasInstance](x: unknown): boolean {
    return isInstance(this, SluiceError, SLUICE_ERROR, x);
  }

  get [SLUICE_ERROR](): string {
    return SLUICE_VERSION;
  }

  constructor(code: SluiceErrorCode, message: string) {
    super(`[sluice] ${message}`);
    this.name = 'SluiceError';
    this.code = code;
    this.help = `docs/errors.md#${code.toLowerCase()}`;
  }
}

/** Renders a user-supplied value for an error message: strings quoted, everything else as JS would show it. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null) {
    return String(value);
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
