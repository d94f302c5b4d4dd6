/**
 * The options every part that keeps its state on Redis checks alike (RedisStore, the guard's Redis state):
 * an object of known fields, a client, a key prefix that stays outside the keys' hash tags, and a call
 * timeout. Each owner checks its own further options.
 */
import { SluiceError, show } from '../../core/index.js';
import { check } from '../../core/option-checks.js';

export interface RedisBasics {
  readonly client: unknown;
  readonly prefix: string;
  readonly timeoutMs: number;
}

/** Throws ERR_SLUICE_INVALID_OPTION, as `<owner> <message>`, for the first option that is wrong. */
export function checkRedisBasics(owner: string, options: unknown, known: ReadonlySet<string>): RedisBasics {
  const invalid = (message: string): never => {
    throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `${owner} ${message}`);
  };
  if (typeof options !== 'object' || options === null)
    invalid(`options must be an object such as { client }, got ${show(options)}`);
  const o = options as { client?: unknown; prefix?: unknown; timeoutMs?: unknown };
  for (const field of Object.keys(o)) {
    if (!known.has(field)) invalid(`unknown option '${field}'; known options are ${[...known].join(', ')}`);
  }
  if (o.client === undefined) invalid(`'client' is required: an ioredis or node-redis client`);
  const prefix = o.prefix ?? 'sluice';
  if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
    invalid(
      `'prefix' must be a non-empty string without '{' or '}' (the key's hash tag follows it), got ${show(prefix)}`,
    );
  }
  const timeoutMs = check.positiveNumber(o.timeoutMs ?? 50, `${owner} 'timeoutMs'`, { unit: 'milliseconds' });
  return { client: o.client, prefix: prefix as string, timeoutMs };
}
