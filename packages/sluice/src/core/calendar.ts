/**
 * Calendar windows: a fixed window of a local day, week or month in an IANA time zone, reset at local
 * midnight (on the chosen first day of the week, on the first of the month). Bounds come from Intl, so a
 * New York day is 23 or 25 hours on the days the clocks change, and a month 28 to 31 days. The window
 * counts as a fixed window does, with the window's start (epoch ms) where the fixed window keeps its index.
 *
 * Redis scripts carry no time-zone data: the store sends each call the bounds of the period around the
 * app's now and of its neighbours (`boundsAround`), and the script picks the period holding Redis's now
 * (docs/redis.md, "Calendar windows").
 *
 * State (2 slots): [start of the window counted (epoch ms), count in it]. All zeros is idle.
 */
import { SluiceError, show } from './errors.js';
import { countInWindow } from './fixed-window.js';
import type { Calendar, Policy, SlabAlgorithm, Verdict } from './types.js';

export const CALENDAR_UNITS = ['day', 'week', 'month'] as const;
/** What `windowMs` reads for a calendar window (headers' `w=`): its usual length. */
export const NOMINAL_MS = { day: 86_400_000, week: 604_800_000, month: 2_592_000_000 } as const;
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const DAY_MS = 86_400_000;

function fail(where: string, message: string): never {
  throw new SluiceError('ERR_SLUICE_INVALID_POLICY', `${where}: ${message}`);
}

/** Validates `timeZone` and `weekStart` for a calendar window of `unit`. */
export function compileCalendar(
  where: string,
  unit: Calendar['unit'],
  timeZone: unknown,
  weekStart: unknown,
): Calendar {
  const zone = timeZone ?? 'UTC';
  if (typeof zone !== 'string' || zone.length === 0)
    fail(where, `'timeZone' must be an IANA time zone name such as 'America/New_York', got ${show(zone)}`);
  let canonical: string;
  try {
    canonical = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    fail(
      where,
      `'timeZone' is not a time zone this runtime knows, got ${show(zone)}; use an IANA name such as 'Europe/Berlin'`,
    );
  }
  if (weekStart !== undefined && unit !== 'week')
    fail(where, `'weekStart' applies to window 'week', not ${show(unit)}`);
  return Object.freeze({ unit, timeZone: canonical, weekStart: unit === 'week' ? firstDay(where, weekStart ?? 1) : 1 });
}

/** ISO weekday (1 = Monday ... 7 = Sunday) from a number, a day name, or { locale }. */
function firstDay(where: string, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 7) return value;
  if (typeof value === 'string' && DAYS.includes(value.toLowerCase())) return DAYS.indexOf(value.toLowerCase()) + 1;
  if (
    typeof value === 'object' &&
    value !== null &&
    Object.keys(value).length === 1 &&
    typeof (value as { locale?: unknown }).locale === 'string'
  ) {
    const tag = (value as { locale: string }).locale;
    let info: { firstDay?: number } | undefined;
    try {
      const l = new Intl.Locale(tag) as Intl.Locale & {
        getWeekInfo?: () => { firstDay: number };
        weekInfo?: { firstDay: number };
      };
      info = typeof l.getWeekInfo === 'function' ? l.getWeekInfo() : l.weekInfo;
    } catch {
      fail(where, `'weekStart.locale' is not a locale this runtime knows, got ${show(tag)}`);
    }
    if (info?.firstDay === undefined)
      fail(
        where,
        `'weekStart.locale' needs Intl.Locale week data, which this runtime lacks; give the day instead, such as 'monday'`,
      );
    return info.firstDay;
  }
  return fail(
    where,
    `'weekStart' must be 1 (Monday) to 7 (Sunday), a day name such as 'sunday', or { locale: 'en-US' }, got ${show(value)}`,
  );
}

/** A date as a number YYYYMMDD, for comparing. */
const dateKey = (y: number, m: number, d: number) => y * 10_000 + m * 100 + d;

/** Local periods of one calendar, found with Intl and remembered. */
export class CalendarPeriods {
  private readonly format: Intl.DateTimeFormat;
  /** Recent periods, newest first: [start, end] pairs. */
  private readonly recent: number[] = [];

  constructor(readonly calendar: Calendar) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: calendar.timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
    });
  }

  /** The local date at instant t: [year, month 1-12, day]. */
  private localDate(t: number): [number, number, number] {
    let y = 0;
    let m = 0;
    let d = 0;
    for (const part of this.format.formatToParts(t)) {
      if (part.type === 'year') y = Number(part.value);
      else if (part.type === 'month') m = Number(part.value);
      else if (part.type === 'day') d = Number(part.value);
    }
    return [y, m, d];
  }

  /**
   * The first instant whose local date is (y, m, d) or later: local midnight, or, where the clocks skip
   * midnight, the end of the gap. Offsets lie within ±18 h of UTC, so it is found by bisection there.
   */
  private startOf(y: number, m: number, d: number): number {
    const target = dateKey(y, m, d);
    const utc = Date.UTC(y, m - 1, d);
    let lo = utc - 18 * 3_600_000; // local date before target here
    let hi = utc + 18 * 3_600_000; // local date at or after target here
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      const [yy, mm, dd] = this.localDate(mid);
      if (dateKey(yy, mm, dd) >= target) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  /** The period holding instant t: [start, end), start inclusive. */
  periodOf(t: number): [start: number, end: number] {
    const r = this.recent;
    for (let i = 0; i < r.length; i += 2) if (r[i]! <= t && t < r[i + 1]!) return [r[i]!, r[i + 1]!];
    const [y, m, d] = this.localDate(t);
    let from: [number, number, number];
    let to: [number, number, number];
    const c = this.calendar;
    if (c.unit === 'day') {
      from = [y, m, d];
      to = civil(Date.UTC(y, m - 1, d) + DAY_MS);
    } else if (c.unit === 'week') {
      const iso = ((new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7) + 1;
      const back = (iso - c.weekStart + 7) % 7;
      from = civil(Date.UTC(y, m - 1, d) - back * DAY_MS);
      to = civil(Date.UTC(from[0], from[1] - 1, from[2]) + 7 * DAY_MS);
    } else {
      from = [y, m, 1];
      to = m === 12 ? [y + 1, 1, 1] : [y, m + 1, 1];
    }
    const start = this.startOf(...from);
    const end = this.startOf(...to);
    r.unshift(start, end);
    if (r.length > 8) r.length = 8;
    return [start, end];
  }

  /** [start of the period before, start, end, end of the period after] of the period holding t. */
  boundsAround(t: number): [number, number, number, number] {
    const [start, end] = this.periodOf(t);
    const [before] = this.periodOf(start - 1);
    const [, after] = this.periodOf(end);
    return [before, start, end, after];
  }
}

/** The civil date of a UTC midnight: [year, month, day]. */
function civil(utcMs: number): [number, number, number] {
  const date = new Date(utcMs);
  return [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()];
}

export class CalendarWindow implements SlabAlgorithm {
  readonly kind = 'slab';
  readonly slots = 2;
  readonly policy: Policy;
  readonly periods: CalendarPeriods;
  private readonly limit: number;

  constructor(policy: Policy, periods?: CalendarPeriods) {
    this.policy = policy;
    this.limit = policy.limit;
    // A per-call limit's variant shares its policy's periods, and so their cache.
    this.periods = periods ?? new CalendarPeriods(policy.calendar!);
  }

  evaluate(s: Float64Array, o: number, now: number, cost: number, v: Verdict): void {
    const stored = s[o]!;
    let [start, end] = this.periods.periodOf(now);
    let endsIn = end - now;
    if (start < stored) {
      // The clock stepped back: stand still at the start of the stored window (as the fixed window does).
      [start, end] = this.periods.periodOf(stored);
      endsIn = end - start;
    }
    countInWindow(v, this.limit, start, stored === start ? s[o + 1]! : 0, cost, endsIn);
  }

  adjust(s: Float64Array, o: number, now: number, delta: number): void {
    const [current] = this.periods.periodOf(now);
    const start = Math.max(current, s[o]!);
    const count = s[o] === start ? s[o + 1]! : 0;
    s[o] = start;
    s[o + 1] = Math.max(0, count + delta);
  }

  idleAt(s: Float64Array, o: number): number {
    return s[o + 1]! > 0 ? this.periods.periodOf(s[o]!)[1] : -Infinity;
  }
}
