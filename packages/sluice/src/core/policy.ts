/** Validates what users write into a `Policy`, with no silent fallback: a bad field is an error naming it. */
import { CALENDAR_UNITS, compileCalendar, NOMINAL_MS } from './calendar.js';
import { parseDuration } from './duration.js';
import { SluiceError, show } from './errors.js';
import { check } from './option-checks.js';
import type { AlgorithmName, Block, Calendar, Policy, PolicyOptions } from './types.js';

export const ALGORITHMS: readonly AlgorithmName[] = [
  'fixed-window',
  'sliding-log',
  'sliding-window',
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'concurrency',
];

/** The smallest emission interval GCRA accepts: 1/64 ms, so rounding stays under 1% of a request. */
const MIN_GCRA_STEP_MS = 1 / 64;
const BUCKETS: ReadonlySet<AlgorithmName> = new Set(['token-bucket', 'gcra', 'leaky-bucket']);
const KNOWN_FIELDS = new Set([
  'name',
  'algorithm',
  'limit',
  'window',
  'timeZone',
  'weekStart',
  'burst',
  'mode',
  'delay',
  'nodelay',
  'buckets',
  'blockFor',
  'countRejected',
]);
const BLOCK_FIELDS = new Set(['duration', 'factor', 'max', 'decay']);

function fail(where: string, message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_POLICY', `${where}: ${message}`);
}

/** A policy field's refusal is ERR_SLUICE_INVALID_POLICY. */
const POLICY = { code: 'ERR_SLUICE_INVALID_POLICY' } as const;

function positiveInteger(where: string, field: string, value: unknown): number {
  return check.positiveInteger(value, `${where}: '${field}'`, {
    code: 'ERR_SLUICE_INVALID_POLICY',
    hint: (v) => numberHint(field, v),
  });
}

/**
 * What a user coming from rate-limiter-flexible (`points: 0`) or reading numbers from config or headers
 * (a numeric string) should do instead; '' for other values.
 */
export function numberHint(field: string, value: unknown): string {
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return ` (a string: pass the number, Number(${show(value)}))`;
  if (value === 0 && field === 'limit')
    return ` (a limit of 0 would refuse every request, which needs no limiter: refuse it yourself, or list the key in the middleware's 'deny')`;
  return '';
}

/** Turns user options into a validated policy. `index` places unnamed policies in error messages. */
export function compilePolicy(options: PolicyOptions, index = 0): Policy {
  if (typeof options !== 'object' || options === null) {
    fail(
      `policy #${index}`,
      `must be an object such as { algorithm: 'gcra', limit: 10, window: '1m' }, got ${show(options)}`,
    );
  }
  const named = options.name;
  if (named !== undefined && (typeof named !== 'string' || named.length === 0)) {
    fail(`policy #${index}`, `'name' must be a non-empty string, got ${show(named)}`);
  }
  const where = named === undefined ? `policy #${index}` : `policy ${show(named)}`;
  for (const field of Object.keys(options)) {
    if (!KNOWN_FIELDS.has(field))
      fail(where, `unknown field '${field}'; known fields are ${[...KNOWN_FIELDS].join(', ')}`);
  }
  const algorithm = options.algorithm;
  if (!ALGORITHMS.includes(algorithm)) {
    fail(where, `unknown 'algorithm' ${show(algorithm)}; choose one of ${ALGORITHMS.join(', ')}`);
  }
  const limit = positiveInteger(where, 'limit', options.limit);
  if (options.window === undefined) fail(where, `'window' is required, got undefined`);
  let calendar: Calendar | undefined;
  let windowMs: number;
  if ((CALENDAR_UNITS as readonly unknown[]).includes(options.window)) {
    const unit = options.window as Calendar['unit'];
    if (algorithm !== 'fixed-window')
      fail(
        where,
        `'window' ${show(unit)} is a calendar window, which only fixed-window counts; give a duration such as '1d' for ${algorithm}`,
      );
    calendar = compileCalendar(where, unit, options.timeZone, options.weekStart);
    windowMs = NOMINAL_MS[unit];
  } else {
    if (options.timeZone !== undefined || options.weekStart !== undefined) {
      fail(
        where,
        `'timeZone' and 'weekStart' apply to a calendar window ('window' 'day', 'week' or 'month'), not 'window' ${show(options.window)}`,
      );
    }
    windowMs = parseDuration(options.window, `${where}: 'window'`);
  }

  const isBucket = BUCKETS.has(algorithm);
  if (!isBucket && options.burst !== undefined) {
    fail(where, `'burst' applies to token-bucket, gcra and leaky-bucket, not ${algorithm}`);
  }
  const burst = options.burst === undefined ? limit : positiveInteger(where, 'burst', options.burst);
  // GCRA (and the shaper built on it) keep one float at epoch magnitude, which resolves about 1/4096 ms;
  // each request adds window/limit to it, so that step must stay well above the resolution.
  if (
    (algorithm === 'gcra' || (algorithm === 'leaky-bucket' && options.mode === 'shaper')) &&
    windowMs / limit < MIN_GCRA_STEP_MS
  ) {
    fail(
      where,
      `${algorithm} resolves at most ${1 / MIN_GCRA_STEP_MS} requests per ms per key, got 'limit' ${limit} per 'window' ${windowMs} ms; use token-bucket, which is exact at any rate`,
    );
  }

  const mode = options.mode ?? 'meter';
  if (options.mode !== undefined && algorithm !== 'leaky-bucket') fail(where, `'mode' applies to leaky-bucket only`);
  check.oneOf(mode, ['meter', 'shaper'], `${where}: 'mode'`, POLICY);
  const shapes = algorithm === 'leaky-bucket' && mode === 'shaper';
  if (!shapes && (options.delay !== undefined || options.nodelay !== undefined)) {
    fail(where, `'delay' and 'nodelay' apply to a leaky-bucket with mode 'shaper'`);
  }
  if (options.nodelay !== undefined) check.boolean(options.nodelay, `${where}: 'nodelay'`, POLICY);
  const nodelay = options.nodelay ?? false;
  if (nodelay && options.delay !== undefined) fail(where, `give 'delay' or 'nodelay', not both`);
  const delay = nodelay ? burst : options.delay === undefined ? 1 : positiveInteger(where, 'delay', options.delay);
  if (delay > burst) fail(where, `'delay' (${delay}) cannot exceed 'burst' (${burst})`);

  if (options.buckets !== undefined && algorithm !== 'sliding-window')
    fail(where, `'buckets' applies to sliding-window only`);
  const buckets = options.buckets === undefined ? 1 : positiveInteger(where, 'buckets', options.buckets);
  if (windowMs % buckets !== 0) {
    fail(where, `'window' (${windowMs} ms) must divide evenly into 'buckets' (${buckets})`);
  }

  const block = options.blockFor === undefined ? undefined : compileBlock(where, algorithm, options.blockFor);

  const countRejected = check.boolean(options.countRejected ?? false, `${where}: 'countRejected'`, POLICY);
  if (countRejected && (algorithm !== 'fixed-window' || calendar !== undefined)) {
    fail(
      where,
      `'countRejected' applies to a fixed-window of a duration (Envoy's counting), not ${calendar === undefined ? algorithm : `a calendar window`}`,
    );
  }
  if (countRejected && block !== undefined)
    fail(where, `give 'countRejected' or 'blockFor', not both: a counted rejection already keeps the window over`);

  return Object.freeze({
    name: named ?? `${algorithm}-${limit}-${windowMs}ms`,
    algorithm,
    limit,
    windowMs,
    capacity: isBucket ? burst : limit,
    burst,
    mode,
    delay,
    nodelay,
    buckets,
    block,
    calendar,
    countRejected,
  });
}

/** `blockFor`: a duration, or `{ duration, factor, max, decay }` for bans that grow. */
function compileBlock(where: string, algorithm: AlgorithmName, value: unknown): Block {
  if (algorithm === 'concurrency')
    fail(where, `'blockFor' does not apply to concurrency: a slot is freed by release(), not by time`);
  if (typeof value !== 'object' || value === null) {
    const durationMs = parseDuration(value, `${where}: 'blockFor'`);
    return Object.freeze({ durationMs, factor: 1, maxMs: durationMs, decayMs: durationMs });
  }
  for (const field of Object.keys(value)) {
    if (!BLOCK_FIELDS.has(field))
      fail(where, `unknown field 'blockFor.${field}'; known fields are ${[...BLOCK_FIELDS].join(', ')}`);
  }
  const o = value as { duration?: unknown; factor?: unknown; max?: unknown; decay?: unknown };
  if (o.duration === undefined) fail(where, `'blockFor.duration' is required, got undefined`);
  const durationMs = parseDuration(o.duration, `${where}: 'blockFor.duration'`);
  const factor = o.factor ?? 2;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > 1000) {
    fail(where, `'blockFor.factor' must be a number from 1 (bans do not grow) to 1000, got ${show(factor)}`);
  }
  if (factor > 1 && o.max === undefined)
    fail(
      where,
      `'blockFor.max' is required when bans grow ('blockFor.factor' ${factor}): the longest ban, such as '1d'`,
    );
  const maxMs = o.max === undefined ? durationMs : parseDuration(o.max, `${where}: 'blockFor.max'`);
  if (maxMs < durationMs)
    fail(where, `'blockFor.max' (${maxMs} ms) cannot be shorter than 'blockFor.duration' (${durationMs} ms)`);
  const decayMs = o.decay === undefined ? maxMs : parseDuration(o.decay, `${where}: 'blockFor.decay'`);
  return Object.freeze({ durationMs, factor, maxMs, decayMs });
}

/** Validates a list of policies: at least one, names unique (they name state and headers). */
export function compilePolicies(list: readonly PolicyOptions[]): Policy[] {
  if (!Array.isArray(list) || list.length === 0) {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `'policies' must be a non-empty array, got ${show(list)}`);
  }
  const policies = list.map((p, i) => compilePolicy(p, i));
  const seen = new Set<string>();
  for (const p of policies) {
    if (seen.has(p.name)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_POLICY',
        `policy ${show(p.name)}: two policies share this name; give each a unique 'name'`,
      );
    }
    seen.add(p.name);
  }
  return policies;
}
