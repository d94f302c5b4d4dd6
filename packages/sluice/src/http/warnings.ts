/** One-time configuration warnings, sent as process 'warning' events with a stable code. */
import { emitWarning } from '../runtime.js';

export type SluiceWarningCode = 'WRN_SLUICE_FORWARDED_HEADER_IGNORED';

const emitted = new Set<SluiceWarningCode>();

/** Emits `code` once per process; later calls are no-ops. */
export function warnOnce(code: SluiceWarningCode, message: string): void {
  if (emitted.has(code)) return;
  emitted.add(code);
  emitWarning(`[sluice] ${message} See docs/errors.md#${code.toLowerCase()}`, { type: 'SluiceWarning', code });
}

/** Whether `code` was already emitted in this process. */
export function warned(code: SluiceWarningCode): boolean {
  return emitted.has(code);
}
