// The node:assert/strict calls the bundled suites make, for runtimes without node:assert (workerd with no
// nodejs_compat flag: the library must load there without it, so the suites do not ask for it either).
class AssertionError extends Error {
  override name = 'AssertionError';
}

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => same(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b, k) && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

const text = (v: unknown) => JSON.stringify(v, (_k, x) => (x === undefined ? '<undefined>' : x));

function equal(actual: unknown, expected: unknown, message?: string): void {
  if (!Object.is(actual, expected))
    throw new AssertionError(`${message ?? 'equal'}: got ${text(actual)}, expected ${text(expected)}`);
}

function deepEqual(actual: unknown, expected: unknown, message?: string): void {
  if (!same(actual, expected))
    throw new AssertionError(`${message ?? 'deepEqual'}: got ${text(actual)}, expected ${text(expected)}`);
}

function ok(value: unknown, message?: string): void {
  if (!value) throw new AssertionError(message ?? `expected a truthy value, got ${text(value)}`);
}

async function rejects(p: Promise<unknown> | (() => Promise<unknown>), check?: (e: unknown) => boolean): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (check !== undefined && !check(e)) throw new AssertionError(`rejected with an unexpected error: ${String(e)}`);
    return;
  }
  throw new AssertionError('expected a rejection');
}

const assert = Object.assign(ok, { equal, deepEqual, ok, strictEqual: equal, deepStrictEqual: deepEqual, rejects });
export { equal, deepEqual, ok, rejects };
export default assert;
