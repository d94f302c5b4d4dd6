/** Values that are plain on the fast path and Promises only when a store or callback is asynchronous. */

export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

export function then<T, U>(v: MaybePromise<T>, f: (x: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(v) ? v.then(f) : f(v);
}
