/**
 * The named checks every option of sluice and its products goes through, so that one kind of bad value is
 * refused in one wording everywhere: `<field> must be <requirement>, got <value>`. The field is named as the
 * caller names it (`RedisStore 'maxInFlight'`, `policy "api": 'limit'`), the value is quoted by `show`, and
 * the SluiceError carries `help`, its section of docs/errors.md. express-rate-limit's validations.ts is
 * the model: each check is a named function, not an inline condition copied from file to file.
 */
import { parseDuration } from './duration.js';
import { SluiceError, type SluiceErrorCode, show } from './errors.js';

/** How a check words and files its refusal; every field is optional. */
export interface CheckOptions {
  /** The error's code: ERR_SLUICE_INVALID_OPTION unless given (a policy field's is ERR_SLUICE_INVALID_POLICY). */
  code?: SluiceErrorCode;
  /** What the number counts, said after the requirement: 'milliseconds' gives "a positive integer of milliseconds". */
  unit?: string;
  /** Said after the requirement (and unit): 'returning milliseconds', '(0 for no margin)'. */
  note?: string;
  /** Said after the value, computed only on refusal: advice for a likely mistake (a numeric string, say). */
  hint?: (value: unknown) => string;
}

/** A number check's options: Infinity is refused unless `orInfinity` (then the message says so). */
export interface NumberCheckOptions extends CheckOptions {
  orInfinity?: boolean;
}

/** Throws the SluiceError `<field> must be <requirement>, got <value>`; the one wording of every check. */
function refuse(field: string, requirement: string, value: unknown, options: CheckOptions = {}): never {
  const unit = options.unit === undefined ? '' : ` of ${options.unit}`;
  const note = options.note === undefined ? '' : ` ${options.note}`;
  const hint = options.hint === undefined ? '' : options.hint(value);
  throw new SluiceError(
    options.code ?? 'ERR_SLUICE_INVALID_OPTION',
    `${field} must be ${requirement}${unit}${note}, got ${show(value)}${hint}`,
  );
}

function isNumber(value: unknown, orInfinity: boolean | undefined): value is number {
  return typeof value === 'number' && (Number.isFinite(value) || (orInfinity === true && value === Infinity));
}

/** The end of a number's requirement: its unit, then whether Infinity passes ("of milliseconds or Infinity"). */
function orInfinity(options: NumberCheckOptions): string {
  return `${options.unit === undefined ? '' : ` of ${options.unit}`}${options.orInfinity ? ' or Infinity' : ''}`;
}

/** A safe integer of at least 1 (a count, a capacity, a size). */
function positiveInteger(value: unknown, field: string, options?: CheckOptions): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    refuse(field, 'a positive integer', value, options);
  return value;
}

/** A safe integer of at least 0 (a cost, a queue bound, a retry count). */
function nonNegativeInteger(value: unknown, field: string, options?: CheckOptions): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    refuse(field, 'a non-negative integer', value, options);
  return value;
}

/** A safe integer from min to max, both included (a status code, a prefix length). */
function integerInRange(value: unknown, min: number, max: number, field: string, options?: CheckOptions): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max)
    refuse(field, `an integer from ${min} to ${max}`, value, options);
  return value;
}

/** A finite number above 0 (a timeout, an interval), or Infinity too with `orInfinity`. */
function positiveNumber(value: unknown, field: string, options: NumberCheckOptions = {}): number {
  if (!isNumber(value, options.orInfinity) || value <= 0)
    refuse(field, `a positive number${orInfinity(options)}`, value, { ...options, unit: undefined });
  return value;
}

/** A finite number of at least 0 (a delay), or Infinity too with `orInfinity`. */
function nonNegativeNumber(value: unknown, field: string, options: NumberCheckOptions = {}): number {
  if (!isNumber(value, options.orInfinity) || value < 0)
    refuse(field, `a non-negative number${orInfinity(options)}`, value, { ...options, unit: undefined });
  return value;
}

/** true or false, nothing truthy. */
function boolean(value: unknown, field: string, options?: CheckOptions): boolean {
  if (typeof value !== 'boolean') refuse(field, 'true or false', value, options);
  return value;
}

/** A function; `note` says what it is called with or returns ('returning milliseconds'). */
function func<F extends Function>(value: unknown, field: string, options?: CheckOptions): F {
  if (typeof value !== 'function') refuse(field, 'a function', value, options);
  return value as F;
}

/** One of the given strings (or other primitives), compared with ===. */
function oneOf<const T>(value: unknown, allowed: readonly T[], field: string, options?: CheckOptions): T {
  if (!allowed.includes(value as T)) {
    const quoted = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : show(a)));
    const requirement = quoted.length === 2 ? `${quoted[0]} or ${quoted[1]}` : `one of ${quoted.join(', ')}`;
    refuse(field, requirement, value, options);
  }
  return value as T;
}

/**
 * A duration in whole milliseconds: a number, or a string such as '500ms', '1s', '1.5m'. parseDuration is
 * the one parser; its refusals carry ERR_SLUICE_INVALID_POLICY, as a policy's window is where they began.
 */
function duration(value: unknown, field: string): number {
  return parseDuration(value, field);
}

/**
 * The checks, by name. Each returns the value, typed, when it passes, and throws a SluiceError naming the
 * field and quoting the value when it does not: `check.positiveInteger(options.maxKeys, "MemoryStore
 * 'maxKeys'")`. An optional field is checked only when given: `x === undefined ? fallback : check…(x, …)`.
 */
export const check = Object.freeze({
  positiveInteger,
  nonNegativeInteger,
  integerInRange,
  positiveNumber,
  nonNegativeNumber,
  boolean,
  function: func,
  oneOf,
  duration,
  refuse,
});
