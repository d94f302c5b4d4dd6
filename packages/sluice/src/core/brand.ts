/**
 * Brands that recognise sluice's objects across copies of sluice: an app that loads sluice with both
 * require() and import gets two copies of every module (dist/cjs and dist), so an `instanceof` across them
 * is false though the object is the same class of the same release. Each branded class answers
 * `instanceof` for an object carrying its brand (a Symbol.for key, shared by every copy) with this
 * release's version; another release's object is not taken, and foreignVersion names it for the error.
 */
export const SLUICE_VERSION = '0.1.0';

/** The brand of a class named `name`: one key for every copy of sluice in the process. */
export function brandOf(name: string): symbol {
  return Symbol.for(`sluice.${name}`);
}

/** Whether `x` carries `brand` of this release. */
export function branded(x: unknown, brand: symbol): boolean {
  return (
    (typeof x === 'object' || typeof x === 'function') &&
    x !== null &&
    (x as Record<symbol, unknown>)[brand] === SLUICE_VERSION
  );
}

/** The release of another copy whose brand `x` carries, if it is not this one. */
export function foreignVersion(x: unknown, brand: symbol): string | undefined {
  if ((typeof x !== 'object' && typeof x !== 'function') || x === null) return undefined;
  const v = (x as Record<symbol, unknown>)[brand];
  return typeof v === 'string' && v !== SLUICE_VERSION ? v : undefined;
}

/** `instanceof` for a branded class: its own instances, and those of another copy of this release. */
type Class = abstract new (...args: never[]) => unknown;

export function isInstance(ctor: Class, base: Class, brand: symbol, x: unknown): boolean {
  return Function.prototype[Symbol.hasInstance].call(ctor, x) || (ctor === base && branded(x, brand));
}
