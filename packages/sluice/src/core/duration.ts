/** Durations: integer milliseconds, or a string such as '500ms', '1s', '1.5m', '1h', '1d'. */
import { SluiceError, show } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/**
 * Parses a duration into whole milliseconds. `field` names the option for the error message,
 * e.g. `policy "per-minute": 'window'`.
 */
export function parseDuration(value: unknown, field: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const m = DURATION.exec(value);
    if (m === null) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_POLICY',
        `${field} must be milliseconds or a duration such as '500ms', '1s', '1m', '1h' or '1d', got ${show(value)}`,
      );
    }
    ms = Number(m[1]) * UNIT_MS[m[2]!]!;
    // '0.1s' is 100 ms exactly, but 0.1 * 1000 is 100.00000000000001 in floating point.
    const rounded = Math.round(ms);
    if (Math.abs(ms - rounded) < 1e-6) ms = rounded;
  } else {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICY',
      `${field} must be milliseconds or a duration string, got ${show(value)}`,
    );
  }
  if (!Number.isFinite(ms) || ms <= 0 || !Number.isInteger(ms)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICY',
      `${field} must be a positive whole number of milliseconds, got ${show(value)}`,
    );
  }
  return ms;
}
