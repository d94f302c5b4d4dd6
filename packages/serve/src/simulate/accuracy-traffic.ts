// The two traffic mixes of `sluice simulate accuracy`, each source's request times generated from a seed.
// typical:    99.5% of sources Poisson at 1–30% of the limit; 0.5% bots Poisson at 2–20× the limit.
// near-limit: 90% Poisson at 1–30%; 5% steady just above the limit (1.01–1.10×, jittered);
//             5% bursting to 2× the limit in on/off cycles (on and off each 0.5–2 windows).
// Every source starts at a random phase, so epoch-aligned windows fall anywhere in its traffic.
import { seededRandom } from 'sluice/kit';

export type MixName = 'typical' | 'near-limit';
export const MIXES: readonly MixName[] = ['typical', 'near-limit'];

export type SourceKind = 'poisson' | 'bot' | 'steady' | 'bursting';

export interface SourcePlan {
  readonly kind: SourceKind;
  /** Offered rate, in multiples of the limit per window (while on, for a bursting source). */
  readonly load: number;
  /** Seeds this source's own arrival times. */
  readonly seed: number;
}

/** The sources of a mix: their kinds and loads, fixed by the seed. */
export function planSources(mix: MixName, sources: number, seed: number): SourcePlan[] {
  const random = seededRandom(seed);
  const plans: SourcePlan[] = [];
  for (let i = 0; i < sources; i++) {
    const u = random();
    const s = Math.floor(random() * 2 ** 31);
    let plan: SourcePlan;
    if (mix === 'typical')
      plan =
        u < 0.005
          ? { kind: 'bot', load: 2 + 18 * random(), seed: s }
          : { kind: 'poisson', load: 0.01 + 0.29 * random(), seed: s };
    else if (u < 0.05) plan = { kind: 'steady', load: 1.01 + 0.09 * random(), seed: s };
    else if (u < 0.1) plan = { kind: 'bursting', load: 2, seed: s };
    else plan = { kind: 'poisson', load: 0.01 + 0.29 * random(), seed: s };
    plans.push(plan);
  }
  return plans;
}

/** Mean offered requests per window of a plan (a bursting source is on half the time on average). */
export function meanLoad(p: SourcePlan): number {
  return p.kind === 'bursting' ? p.load / 2 : p.load;
}

/**
 * Writes one source's request times (whole ms, ascending) over [start, start + durationMs) into `out`,
 * growing it as needed; returns the array and the count.
 */
export function arrivals(
  p: SourcePlan,
  limit: number,
  windowMs: number,
  start: number,
  durationMs: number,
  out: Float64Array,
): [Float64Array, number] {
  const random = seededRandom(p.seed);
  const end = start + durationMs;
  const gap = windowMs / (limit * p.load); // mean ms between requests
  let n = 0;
  const push = (t: number) => {
    if (n === out.length) {
      const bigger = new Float64Array(out.length * 2);
      bigger.set(out);
      out = bigger;
    }
    out[n++] = Math.floor(t);
  };
  let t = start + random() * windowMs; // random phase
  if (p.kind === 'poisson' || p.kind === 'bot') {
    for (t += -Math.log(1 - random()) * gap; t < end; t += -Math.log(1 - random()) * gap) push(t);
  } else if (p.kind === 'steady') {
    for (; t < end; t += gap * (0.9 + 0.2 * random())) push(t);
  } else {
    let switchAt = t + windowMs * (0.5 + 1.5 * random()); // end of the first on period
    while (t < end) {
      if (t >= switchAt) {
        t = switchAt + windowMs * (0.5 + 1.5 * random()); // skip the off period
        switchAt = t + windowMs * (0.5 + 1.5 * random());
        continue;
      }
      push(t);
      t += gap * (0.9 + 0.2 * random());
    }
  }
  return [out, n];
}
