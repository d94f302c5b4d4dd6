// Calendar windows on any store: days, weeks and months in America/New_York, Europe/Berlin and UTC across
// 2026's clock changes and month ends, against instants written out by hand (not computed with Intl), and
// random instants of 2026 whose window ends at local midnight exactly when resetAfterMs says.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Limiter } from '../../src/index.js';
import type { PolicyOptions, Store } from '../../src/index.js';

const H = 3_600_000;
const D = 24 * H;
const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h);

/** [what, policy window fields, an instant inside the period, its start, its end]. */
export const periods: [string, Pick<PolicyOptions, 'window' | 'timeZone' | 'weekStart'>, number, number, number][] = [
  // New York: EST is UTC-5, EDT UTC-4; 2026's changes are on 8 March and 1 November.
  [
    'New York, 8 March 2026 (23 h)',
    { window: 'day', timeZone: 'America/New_York' },
    utc(2026, 3, 8, 12),
    utc(2026, 3, 8, 5),
    utc(2026, 3, 9, 4),
  ],
  [
    'New York, 1 November 2026 (25 h)',
    { window: 'day', timeZone: 'America/New_York' },
    utc(2026, 11, 1, 12),
    utc(2026, 11, 1, 4),
    utc(2026, 11, 2, 5),
  ],
  [
    'New York, an ordinary day',
    { window: 'day', timeZone: 'America/New_York' },
    utc(2026, 6, 15, 3),
    utc(2026, 6, 14, 4),
    utc(2026, 6, 15, 4),
  ],
  [
    'New York, the week (from Monday) with 8 March',
    { window: 'week', timeZone: 'America/New_York' },
    utc(2026, 3, 8, 20),
    utc(2026, 3, 2, 5),
    utc(2026, 3, 9, 4),
  ],
  [
    'New York, the week from Sunday 8 March',
    { window: 'week', timeZone: 'America/New_York', weekStart: 'sunday' },
    utc(2026, 3, 10),
    utc(2026, 3, 8, 5),
    utc(2026, 3, 15, 4),
  ],
  [
    "New York, the week from en-US's first day (Sunday)",
    { window: 'week', timeZone: 'America/New_York', weekStart: { locale: 'en-US' } },
    utc(2026, 3, 10),
    utc(2026, 3, 8, 5),
    utc(2026, 3, 15, 4),
  ],
  [
    'New York, November 2026 (30 days and 1 h)',
    { window: 'month', timeZone: 'America/New_York' },
    utc(2026, 11, 20),
    utc(2026, 11, 1, 4),
    utc(2026, 12, 1, 5),
  ],
  // Berlin: CET is UTC+1, CEST UTC+2; 2026's changes are on 29 March and 25 October.
  [
    'Berlin, 29 March 2026 (23 h)',
    { window: 'day', timeZone: 'Europe/Berlin' },
    utc(2026, 3, 29, 12),
    utc(2026, 3, 28, 23),
    utc(2026, 3, 29, 22),
  ],
  [
    'Berlin, 25 October 2026 (25 h)',
    { window: 'day', timeZone: 'Europe/Berlin' },
    utc(2026, 10, 25, 12),
    utc(2026, 10, 24, 22),
    utc(2026, 10, 25, 23),
  ],
  [
    'Berlin, February 2026 (28 days)',
    { window: 'month', timeZone: 'Europe/Berlin' },
    utc(2026, 2, 14),
    utc(2026, 1, 31, 23),
    utc(2026, 2, 28, 23),
  ],
  [
    'Berlin, March 2026 (31 days less 1 h)',
    { window: 'month', timeZone: 'Europe/Berlin' },
    utc(2026, 3, 31, 21),
    utc(2026, 2, 28, 23),
    utc(2026, 3, 31, 22),
  ],
  [
    'Berlin, April 2026 (30 days)',
    { window: 'month', timeZone: 'Europe/Berlin' },
    utc(2026, 4, 1),
    utc(2026, 3, 31, 22),
    utc(2026, 4, 30, 22),
  ],
  [
    'Berlin, the week with 25 October (Monday to Monday)',
    { window: 'week', timeZone: 'Europe/Berlin', weekStart: 1 },
    utc(2026, 10, 25, 22),
    utc(2026, 10, 18, 22),
    utc(2026, 10, 25, 23),
  ],
  ['UTC, January 2026 (31 days)', { window: 'month' }, utc(2026, 1, 31, 23), utc(2026, 1, 1), utc(2026, 2, 1)],
  [
    'UTC, February 2028 (29 days)',
    { window: 'month', timeZone: 'UTC' },
    utc(2028, 2, 29, 12),
    utc(2028, 2, 1),
    utc(2028, 3, 1),
  ],
  ['UTC, a day', { window: 'day' }, utc(2026, 12, 31, 23), utc(2026, 12, 31), utc(2027, 1, 1)],
];

/** `perCallLimits: false` for a store that refuses them (the Durable Object store). */
export function calendarConformance(
  name: string,
  makeStore: () => Store,
  runs = 100,
  { perCallLimits = true } = {},
): void {
  for (const [what, fields, inside, start, end] of periods) {
    test(`${name}: calendar window, ${what}: counts from local midnight to local midnight`, async () => {
      let now = inside;
      const l = new Limiter({
        policy: { name: 'quota', algorithm: 'fixed-window', limit: 3, ...fields },
        store: makeStore(),
        clock: () => now,
      });
      const key = `cal:${Math.random().toString(36).slice(2)}`;
      const first = await l.limit(key, { cost: 3 });
      assert.deepEqual(
        [first.allowed, first.resetAfterMs],
        [true, end - inside],
        'resetAfterMs runs to the local midnight that ends it',
      );
      now = end - 1;
      const last = await l.limit(key);
      assert.deepEqual(
        [last.allowed, last.retryAfterMs, last.resetAfterMs],
        [false, 1, 1],
        'the last millisecond is still in it',
      );
      now = end;
      const next = await l.limit(key, { cost: 3 });
      assert.deepEqual([next.allowed, next.remaining], [true, 0], 'a new window at local midnight');
      // Its first millisecond is in it, and the one before is in the one before.
      const other = `cal-start:${Math.random().toString(36).slice(2)}`;
      now = start;
      assert.equal(
        (await l.limit(other, { cost: 3 })).resetAfterMs,
        end - start,
        `the window is ${(end - start) / H} h`,
      );
      now = start - 1;
      const before = await l.limit(other, { cost: 3 });
      assert.deepEqual(
        [before.allowed, before.resetAfterMs],
        [false, end - start],
        'a clock stepped back stands still at the start of the newer window',
      );
    });
  }

  test(`${name}: calendar days of 2026 in New York and Berlin end at local midnight, as resetAfterMs says`, async () => {
    const zones = ['America/New_York', 'Europe/Berlin'] as const;
    const local = Object.fromEntries(
      zones.map((z) => [
        z,
        new Intl.DateTimeFormat('en-GB', {
          timeZone: z,
          hourCycle: 'h23',
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
        }),
      ]),
    );
    const store = makeStore();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...zones),
        fc.constantFrom('day', 'week', 'month'),
        fc.integer({ min: utc(2026, 1, 1), max: utc(2027, 1, 1) }),
        async (zone, unit, t) => {
          let now = t;
          const l = new Limiter({
            policy: { name: 'q', algorithm: 'fixed-window', limit: 1, window: unit, timeZone: zone },
            store,
            clock: () => now,
          });
          const key = `cal-prop:${Math.random().toString(36).slice(2)}`;
          const d = await l.limit(key);
          const end = t + d.resetAfterMs;
          const at = (ms: number) => local[zone]!.format(ms);
          assert.match(
            at(end),
            / 00:00:00$/,
            `${unit} from ${new Date(t).toISOString()} ends at local midnight, got ${at(end)}`,
          );
          assert.doesNotMatch(at(end - 1), / 00:00:00$/);
          const length =
            unit === 'day' ? [23 * H, 25 * H] : unit === 'week' ? [7 * D - H, 7 * D + H] : [28 * D - H, 31 * D + H];
          assert.ok(d.resetAfterMs <= length[1]!, `${unit} of at most ${length[1]! / H} h`);
          now = end - 1;
          assert.equal((await l.limit(key)).allowed, false);
          now = end;
          const fresh = await l.limit(key);
          assert.equal(fresh.allowed, true);
          assert.ok(
            fresh.resetAfterMs >= length[0]! && fresh.resetAfterMs <= length[1]!,
            `the next ${unit} is ${fresh.resetAfterMs / H} h`,
          );
        },
      ),
      { numRuns: runs },
    );
  });

  if (!perCallLimits) return;
  test(`${name}: a calendar quota with per-call limits and a ban`, async () => {
    let now = utc(2026, 3, 8, 12);
    const l = new Limiter({
      policy: {
        name: 'daily',
        algorithm: 'fixed-window',
        limit: 2,
        window: 'day',
        timeZone: 'America/New_York',
        blockFor: '1h',
      },
      store: makeStore(),
      clock: () => now,
    });
    const key = `cal-mix:${Math.random().toString(36).slice(2)}`;
    assert.equal((await l.limit(key, { cost: 5, limits: { daily: 5 } })).allowed, true);
    const banned = await l.limit(key);
    assert.deepEqual(
      [banned.allowed, banned.blocked, banned.retryAfterMs],
      [false, true, utc(2026, 3, 9, 4) - now],
      'the day outlasts the hour',
    );
    now = utc(2026, 3, 9, 4);
    assert.equal((await l.limit(key, { cost: 2 })).allowed, true, 'a new day in New York');
  });
}
