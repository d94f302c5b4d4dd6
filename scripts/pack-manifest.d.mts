/** `exports` without the `sluice-source` condition, at any depth. */
export function withoutSourceCondition<T>(value: T): T;
