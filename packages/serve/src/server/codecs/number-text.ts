/**
 * Number-to-text conversions on the /json answer path, each giving exactly what String() or a template
 * literal would, only cheaper for the values that path meets. V8 converts an integer outside the 31-bit
 * small-integer range, and any fraction, through its general double-to-shortest-decimal routine, which
 * costs several times what these do for a remaining count such as 3999999999 or a reset time such as
 * 2121.991; a /json answer writes three such numbers.
 */

const SMALL = 2 ** 31;
/** Integers from 10^15 on may print in fewer digits than they have (or in exponent form): left to String(). */
const EXACT = 1e15;

let lastInteger = -1;
let lastIntegerText = '-1';

/**
 * String(n) for a number, remembering the last answer: a /json answer prints the same remaining count twice
 * (in its status and in RateLimit-Remaining).
 */
export function integerText(n: number): string {
  if (n === lastInteger) return lastIntegerText;
  lastIntegerText = numberText(n);
  lastInteger = n;
  return lastIntegerText;
}

/** String(n); an integer from 2^31 to 10^15 is printed as two small integers. */
function numberText(n: number): string {
  if (n < SMALL || n >= EXACT || !Number.isInteger(n)) return String(n);
  const high = Math.floor(n / 1e9);
  return `${high}${String(n - high * 1e9).padStart(9, '0')}`;
}

/**
 * `${ms / 1000}`: seconds with up to three decimals and no trailing zeros. For a whole number of
 * milliseconds below 10^15 the decimal ms/1000 has at most 15 significant digits, so it is the shortest
 * text that reads back as that double, which is what JavaScript prints; anything else goes to the template.
 */
export function millisAsSeconds(ms: number): string {
  if (!(ms >= 0 && ms < EXACT) || !Number.isInteger(ms)) return `${ms / 1000}`;
  const s = Math.floor(ms / 1000);
  const r = ms - s * 1000;
  const whole = numberText(s);
  if (r === 0) return whole;
  if (r % 100 === 0) return `${whole}.${r / 100}`;
  if (r % 10 === 0) return `${whole}.${r < 100 ? '0' : ''}${r / 10}`;
  return `${whole}.${r < 10 ? '00' : r < 100 ? '0' : ''}${r}`;
}
