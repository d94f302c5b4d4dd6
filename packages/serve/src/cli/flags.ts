/**
 * The number flags of `sluice simulate …`, parsed in one place. A flag's value is text the user typed, so a
 * refusal is a usage message for the command to print (with its own prefix and usage), not a thrown
 * SluiceError: the wording follows sluice/kit's checks, `<flag> needs a positive integer, got "<text>"`.
 */

/** A whole number from 1 up to Number.MAX_SAFE_INTEGER written in decimal digits, or the message refusing it. */
export function positiveIntegerFlag(flag: string, value: string | undefined): number | string {
  const n = value !== undefined && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1) return `${flag} needs a positive integer, got ${JSON.stringify(value ?? '')}`;
  return n;
}
