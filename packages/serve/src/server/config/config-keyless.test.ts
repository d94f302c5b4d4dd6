// A descriptor without `key` is one problem, and the rest of it is still checked: check-config once missed
// a `burst` on a fixed window there (issue 38), so a user fixed the key and met the next error only then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from './config.js';

function problems(text: string): readonly string[] {
  try {
    parseConfig([{ file: 'p.yaml', text }]);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

test("a descriptor without 'key' still has its rate_limit checked: burst on a fixed window is reported beside the missing key", () => {
  assert.deepEqual(
    problems('domain: api\ndescriptors:\n  - rate_limit: { unit: second, requests_per_unit: 5, burst: 10 }\n'),
    [
      "p.yaml:3:5: descriptors[0].key: 'key' is required",
      "p.yaml:3:62: descriptors[0].rate_limit: 'burst' applies to token-bucket, gcra and leaky-bucket, not fixed-window",
    ],
  );
  // Its nested descriptors too, and two keyless descriptors are not reported as duplicates of each other.
  assert.deepEqual(
    problems(
      'domain: api\ndescriptors:\n  - descriptors:\n      - key: k\n        rate_limit: { unit: sekond, requests_per_unit: 1 }\n  - value: x\n',
    ),
    [
      "p.yaml:3:5: descriptors[0].key: 'key' is required",
      "p.yaml:5:29: descriptors[0].descriptors[0].rate_limit.unit: invalid rate limit unit 'sekond'; use second, minute, hour, day, week, month or year",
      "p.yaml:6:5: descriptors[1].key: 'key' is required",
    ],
  );
});
