/** @file Median / min–max summaries and number formatting for the bench report. */

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** Median with its range: on a shared noisy machine the min–max is the honest error bar. */
export function summarize(xs) {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
}

/** 12345678 -> "12.35 M", 123456 -> "123.5 k" */
export function fmtRate(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x >= 1e6) return (x / 1e6).toFixed(2) + ' M';
  if (x >= 1e3) return (x / 1e3).toFixed(1) + ' k';
  return x.toFixed(0);
}

export const fmtFixed = (digits) => (x) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

/** "median (min – max)" */
export function fmtSummary(s, f = fmtRate) {
  return `${f(s.median)} (${f(s.min)} – ${f(s.max)})`;
}
