/**
 * V8's internalized ("interned") copy of a string: property names are internalized, so a string used as one
 * comes back from Object.keys as the one canonical string of its text, flat, its hash computed. A Map lookup
 * whose key and stored key are both internalized finds its entry by comparing pointers; with a sliced string
 * on either side (every key of 13 or more characters cut from a YAML file or a request body is one) V8
 * hashes it and compares the texts in the runtime (String::SlowEquals). Used where strings are made once and
 * looked up on every request: the config's descriptor keys and domains, the decoder's cached keys.
 * Same text either way; only the cost of looking it up differs. An array-index text ("42") comes back as a
 * number's text, not internalized, which is only slower.
 */
export function internalized(s: string): string {
  // No prototype: on a plain object, `o['__proto__'] = 0` sets the prototype and makes no key at all.
  const o: Record<string, 0> = Object.create(null);
  o[s] = 0;
  return Object.keys(o)[0]!;
}
