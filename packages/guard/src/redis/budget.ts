/**
 * The budget of records an attacker can make the guard keep on Redis: records of accounts and sources that
 * never succeeded (an account with no familiar source, a source with no success in its ratio window).
 * Each is kept as long as its evidence is useful, up to a week for a source (a slow stuffer's proxy comes
 * back days later), while such records are made slowly; when they are made faster than `maxRecords` per
 * that lifetime (a flood of new addresses or accounts), each lives `maxRecords / rate` instead, and at
 * least `floorMs` (the short distinct-accounts window, whose signals a flood must not blind), so those
 * kept stay about `maxRecords`, the newest. The rate is this app server's: records it made in the last
 * minute, by a sliding-window estimate (two one-minute generations, the older fading linearly).
 */
const WINDOW_MS = 60_000;

export class RecordBudget {
  private gen = 0;
  private current = 0;
  private previous = 0;

  /** `longestMs`: the longest a record's evidence keeps it; a cap at or above it is none. */
  constructor(
    readonly maxRecords: number,
    readonly floorMs: number,
    readonly longestMs: number,
  ) {}

  /** `n` records made at `now` (guard clock ms), whose accounts or sources had none. */
  note(n: number, now: number): void {
    if (n === 0) return;
    this.roll(now);
    this.current += n;
  }

  /** The longest a never-succeeded record may live when written at `now`: 0 for no cap. */
  capMs(now: number): number {
    this.roll(now);
    const elapsed = now - this.gen * WINDOW_MS;
    const made = this.previous * Math.max(0, (WINDOW_MS - elapsed) / WINDOW_MS) + this.current;
    if (made <= 0) return 0;
    const cap = (this.maxRecords * WINDOW_MS) / made; // maxRecords at this rate
    return cap >= this.longestMs ? 0 : Math.ceil(Math.max(this.floorMs, cap));
  }

  private roll(now: number): void {
    const gen = Math.floor(now / WINDOW_MS);
    if (gen === this.gen) return;
    this.previous = gen === this.gen + 1 ? this.current : 0;
    this.current = 0;
    this.gen = gen;
  }
}
