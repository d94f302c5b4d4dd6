// Calendar windows' validation: every bad field is an error naming the field and quoting the value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePolicy, SluiceError } from './index.js';
import type { PolicyOptions } from './index.js';

const base = { name: 'q', algorithm: 'fixed-window', limit: 100, window: 'day' } as const;

function rejects(options: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () => compilePolicy({ ...base, ...options } as PolicyOptions),
    (e: unknown) => e instanceof SluiceError && e.code === 'ERR_SLUICE_INVALID_POLICY' && message.test(e.message),
    String(message),
  );
}

test('calendar windows: bad fields name the field and the value', () => {
  rejects(
    { timeZone: 'Mars/Olympus' },
    /policy "q": 'timeZone' is not a time zone this runtime knows, got "Mars\/Olympus"/,
  );
  rejects({ timeZone: 5 }, /'timeZone' must be an IANA time zone name such as 'America\/New_York', got 5/);
  rejects(
    { window: 'week', weekStart: 0 },
    /'weekStart' must be 1 \(Monday\) to 7 \(Sunday\), a day name such as 'sunday', or \{ locale: 'en-US' \}, got 0/,
  );
  rejects({ window: 'week', weekStart: 'funday' }, /'weekStart' must be .* got "funday"/);
  rejects(
    { window: 'week', weekStart: { locale: '' } },
    /'weekStart.locale' is not a locale this runtime knows, got ""/,
  );
  rejects({ weekStart: 'monday' }, /'weekStart' applies to window 'week', not "day"/);
  rejects(
    { algorithm: 'token-bucket' },
    /'window' "day" is a calendar window, which only fixed-window counts; give a duration such as '1d' for token-bucket/,
  );
  rejects(
    { window: '1d', timeZone: 'UTC' },
    /'timeZone' and 'weekStart' apply to a calendar window \('window' 'day', 'week' or 'month'\), not 'window' "1d"/,
  );
  rejects({ window: 'year' }, /'window' must be milliseconds or a duration such as '500ms'.*got "year"/);
});

test('calendar windows: defaults are stated, and names are canonical', () => {
  assert.deepEqual(compilePolicy(base).calendar, { unit: 'day', timeZone: 'UTC', weekStart: 1 });
  assert.equal(compilePolicy(base).windowMs, 86_400_000);
  assert.deepEqual(
    compilePolicy({ ...base, window: 'week', timeZone: 'europe/berlin', weekStart: 'Sunday' }).calendar,
    { unit: 'week', timeZone: 'Europe/Berlin', weekStart: 7 },
  );
  assert.deepEqual(compilePolicy({ ...base, window: 'week', weekStart: { locale: 'de-DE' } }).calendar?.weekStart, 1);
  assert.equal(compilePolicy({ ...base, window: '1d' }).calendar, undefined);
});
