// `sluice simulate accuracy`: flag parsing and output for the accuracy replay (src/simulate/accuracy.ts).
import { ACCURACY_DEFAULTS, formatAccuracy, simulateAccuracy } from '../simulate/accuracy.js';
import { MIXES, type MixName } from '../simulate/accuracy-traffic.js';
import { positiveIntegerFlag } from './flags.js';

export const ACCURACY_USAGE = `Replays synthetic sources (limit 100 per 60 s each) through the fixed window, the sliding-window
counter (buckets 1), its sub-window variant (buckets K) and the exact sliding log, each on its own, and
prints false positives, over-admitted sources, worst overshoot, disagreement with the exact log and
state bytes per key, with Cloudflare's published figures beside them.
  --seed N         seeds the mixes (default ${ACCURACY_DEFAULTS.seed}); the same seed prints the same table
  --sources N      sources per mix (default ${ACCURACY_DEFAULTS.sources})
  --requests N     requests per mix, at least (default ${ACCURACY_DEFAULTS.requests})
  --buckets K      sub-windows of the variant (default ${ACCURACY_DEFAULTS.buckets}; docs/algorithms.md, "Accuracy of the counters")
  --mix NAME       only this mix (repeatable): ${MIXES.join(', ')}
`;

interface Output {
  out(text: string): void;
  err(text: string): void;
}

export async function accuracyCommand(args: readonly string[], output: Output, usage: string): Promise<number> {
  const o = { ...ACCURACY_DEFAULTS, mixes: [] as MixName[] };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    const value = args[++i];
    const numeric = {
      '--seed': 'seed',
      '--sources': 'sources',
      '--requests': 'requests',
      '--buckets': 'buckets',
    } as const;
    if (Object.hasOwn(numeric, flag)) {
      const n = positiveIntegerFlag(flag, value);
      if (typeof n === 'string') {
        output.err(`sluice simulate accuracy: ${n}\n\n${usage}`);
        return 2;
      }
      o[numeric[flag as keyof typeof numeric]] = n;
    } else if (flag === '--mix' && MIXES.includes(value as MixName)) {
      o.mixes.push(value as MixName);
    } else {
      const why =
        flag === '--mix'
          ? `unknown mix ${JSON.stringify(value ?? '')}; known mixes: ${MIXES.join(', ')}`
          : `unexpected argument ${JSON.stringify(flag)}`;
      output.err(`sluice simulate accuracy: ${why}\n\n${usage}`);
      return 2;
    }
  }
  if (o.mixes.length === 0) o.mixes = [...MIXES];
  const started = Date.now();
  const results = simulateAccuracy(o, (m) => output.err(`  ${m.mix}: done\n`));
  output.out(formatAccuracy(o, results, Date.now() - started));
  return 0;
}
