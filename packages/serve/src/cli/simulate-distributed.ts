// `sluice simulate distributed`: flag parsing and output for the multi-process strategy comparison
// (src/simulate/distributed.ts). It needs a Redis it may write to under a unique prefix, and ioredis.
import { formatDistributed, simulateDistributed, STRATEGY_NAMES, type StrategyName } from '../simulate/distributed.js';
import { SHAPES, type ShapeName } from '../simulate/distributed-shapes.js';
import { positiveIntegerFlag } from './flags.js';

export const DISTRIBUTED_USAGE = `Runs N node processes against a real Redis for each traffic shape and strategy, and prints over- and
under-admission against the ideal exact limiter, Redis calls per decision, p50/p99 decision latency and,
when a node is killed, how long until a window admits its whole limit again and until Redis settles the
dead node's lease. Keys get a unique prefix; nothing is flushed.
  --redis URL      the Redis to use (default redis://127.0.0.1:6379); needs ioredis installed
  --nodes N        node processes (default 4)
  --seconds N      length of each run (default 3)
  --shape NAME     only this shape (repeatable): ${SHAPES.join(', ')}
  --strategy NAME  only this strategy (repeatable): ${STRATEGY_NAMES.join(', ')}
  --local-sync-threshold N    local-sync's threshold (default 0.25% of each limit, at least 1)
  --local-sync-interval MS    local-sync's flush interval (default 100)
  --lease-ttl MS              lease's TTL (default 200: twice its horizon, which is a tenth of the 1 s window)
`;

interface Output {
  out(text: string): void;
  err(text: string): void;
}

export async function distributedCommand(args: readonly string[], output: Output, usage: string): Promise<number> {
  let url = 'redis://127.0.0.1:6379';
  let nodes = 4;
  let seconds = 3;
  const shapes: ShapeName[] = [];
  const strategies: StrategyName[] = [];
  const localSync: { threshold?: number; intervalMs?: number } = {};
  const lease: { ttlMs?: number } = {};
  const fail = (why: string) => (output.err(`sluice simulate distributed: ${why}\n\n${usage}`), 2);
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    const value = args[++i];
    if (
      flag === '--nodes' ||
      flag === '--seconds' ||
      flag === '--local-sync-threshold' ||
      flag === '--local-sync-interval' ||
      flag === '--lease-ttl'
    ) {
      const n = positiveIntegerFlag(flag, value);
      if (typeof n === 'string') return fail(n);
      if (flag === '--nodes') nodes = n;
      else if (flag === '--seconds') seconds = n;
      else if (flag === '--local-sync-threshold') localSync.threshold = n;
      else if (flag === '--local-sync-interval') localSync.intervalMs = n;
      else if (n > 1000) return fail(`--lease-ttl must be at most the 1 s window, got ${value}`);
      else lease.ttlMs = n;
    } else if (flag === '--redis' && value !== undefined && /^rediss?:\/\//.test(value)) url = value;
    else if (flag === '--shape' && SHAPES.includes(value as ShapeName)) shapes.push(value as ShapeName);
    else if (flag === '--strategy' && STRATEGY_NAMES.includes(value as StrategyName))
      strategies.push(value as StrategyName);
    else if (flag === '--redis') return fail(`--redis needs a redis:// URL, got ${JSON.stringify(value ?? '')}`);
    else if (flag === '--shape')
      return fail(`unknown shape ${JSON.stringify(value ?? '')}; known shapes: ${SHAPES.join(', ')}`);
    else if (flag === '--strategy')
      return fail(`unknown strategy ${JSON.stringify(value ?? '')}; known strategies: ${STRATEGY_NAMES.join(', ')}`);
    else return fail(`unexpected argument ${JSON.stringify(flag)}`);
  }
  try {
    await import('ioredis');
  } catch {
    output.err('sluice simulate distributed: needs ioredis; install it with `npm install ioredis`\n');
    return 1;
  }
  const o = {
    url,
    nodes,
    seconds,
    shapes: shapes.length ? shapes : SHAPES,
    strategies: strategies.length ? strategies : STRATEGY_NAMES,
    localSync,
    lease,
  };
  const results = await simulateDistributed(o, (r) => output.err(`  ${r.shape} / ${r.strategy}: done\n`));
  output.out(formatDistributed(o, results));
  return 0;
}
