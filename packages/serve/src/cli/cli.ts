// The `sluice` command line: a table of subcommands and a dispatcher that returns an exit code.
import { readFileSync } from 'node:fs';
import { runDemo } from '../demo/index.js';
import { formatResults, SCENARIO_NAMES, simulateAttacks, type SimulateOptions } from '../simulate/index.js';
import { positiveIntegerFlag } from './flags.js';
import { accuracyCommand, ACCURACY_USAGE } from './simulate-accuracy.js';
import { distributedCommand, DISTRIBUTED_USAGE } from './simulate-distributed.js';

/** Where a command writes; injected so tests can capture it. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

export interface Command {
  /** One line for `sluice --help`. */
  readonly summary: string;
  /** Usage text for `sluice <name> --help`. */
  readonly usage: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: readonly string[], output: Output): Promise<number>;
}

/** Exit code for a mistake in how the command was called. */
export const EXIT_USAGE = 2;

const demo: Command = {
  summary: 'play the same traffic traces through every algorithm and print the measured comparison',
  usage:
    'usage: sluice demo\n\nPlays steady, bursty, boundary-attack and edge-replay traces through each algorithm on a\nsimulated clock and prints, per trace, what each admitted and how much state it kept.\n',
  async run(args, output) {
    if (args.length > 0) {
      output.err(`sluice demo: unexpected argument ${JSON.stringify(args[0])}\n\n${this.usage}`);
      return EXIT_USAGE;
    }
    output.out(await runDemo());
    return 0;
  },
};

const SIMULATE_USAGE = `usage: sluice simulate attacks [--seed N] [--users N] [--servers N] [--anomaly-scope process|fleet] [--warmup-days N] [--step-up off|suspicious|stuffing]
                               [--leak-coverage X] [--leaked-pair-share X] [--proof-share X] [--attacker-proof-share X]
                               [--scenario NAME]...
       sluice simulate accuracy [--seed N] [--sources N] [--requests N] [--buckets K] [--mix NAME]...
       sluice simulate distributed [--redis URL] [--nodes N] [--seconds N] [--shape NAME]... [--strategy NAME]...

Replays a population of legitimate users mixed with one attack at a time through a Guard with its
defaults, on a simulated clock, and prints what got through and which real users were hindered.
  --seed N         seeds every random choice (default 1); the same seed prints the same table
  --users N        legitimate users (default 10000)
  --servers N      app servers sharing the guard's state and store, logins spread over them (default 1)
  --anomaly-scope process|fleet   the guards' anomalyScope (default process)
  --warmup-days N  days of legitimate traffic before the attack (default 3); 0: a fresh guard meets it 1 min in
  --step-up off|suspicious|stuffing   the guards' successStepUp (default: the guard's, suspicious)
  --leak-coverage X      share of a stuffer's pairs in the app's leaked corpus, 0 to 1 (default 0.9)
  --leaked-pair-share X  share of users whose own pair is in it, 0 to 1 (default 0.015)
  --proof-share X        share of users whose client brings the login page's proof of work (default 0.98)
  --attacker-proof-share X  share of the attacker's attempts that bring one (default 0)
  --scenario NAME  run only this scenario (repeatable): ${SCENARIO_NAMES.join(', ')}

${ACCURACY_USAGE}
${DISTRIBUTED_USAGE}`;

/** Parses a fraction from 0 to 1 written in decimal (0, 0.5, .9, 1), or returns an error message. */
function fractionFlag(flag: string, value: string | undefined): number | string {
  if (value === undefined || !/^(?:0|1|0?\.\d+|1\.0+)$/.test(value))
    return `sluice simulate: ${flag} takes a fraction from 0 to 1, got ${JSON.stringify(value ?? '')}`;
  return Number(value);
}

/** Parses a positive integer flag value, or returns an error message. */
function positiveFlag(flag: string, value: string | undefined): number | string {
  const n = positiveIntegerFlag(flag, value);
  return typeof n === 'string' ? `sluice simulate: ${n}` : n;
}

/** The options of `sluice simulate attacks` that its number flags set. */
type NumberOption =
  | 'seed'
  | 'users'
  | 'servers'
  | 'leakCoverage'
  | 'leakedPairShare'
  | 'proofShare'
  | 'attackerProofShare';

/** `sluice simulate attacks`'s number flags: the option each sets, and its parser. */
const ATTACK_NUMBER_FLAGS = new Map<
  string,
  { option: NumberOption; parse: (flag: string, value: string | undefined) => number | string }
>([
  ['--seed', { option: 'seed', parse: positiveFlag }],
  ['--users', { option: 'users', parse: positiveFlag }],
  ['--servers', { option: 'servers', parse: positiveFlag }],
  ['--leak-coverage', { option: 'leakCoverage', parse: fractionFlag }],
  ['--leaked-pair-share', { option: 'leakedPairShare', parse: fractionFlag }],
  ['--proof-share', { option: 'proofShare', parse: fractionFlag }],
  ['--attacker-proof-share', { option: 'attackerProofShare', parse: fractionFlag }],
]);

const simulate: Command = {
  summary: 'replay attacks on the login guard; measure window accuracy; compare distributed strategies',
  usage: SIMULATE_USAGE,
  async run(args, output) {
    const [what, ...rest] = args;
    if (what === 'accuracy') return accuracyCommand(rest, output, this.usage);
    if (what === 'distributed') return distributedCommand(rest, output, this.usage);
    if (what !== 'attacks') {
      output.err(
        `sluice simulate: expected 'attacks', 'accuracy' or 'distributed', got ${JSON.stringify(what ?? '')}\n\n${this.usage}`,
      );
      return EXIT_USAGE;
    }
    const numbers: { -readonly [K in NumberOption]?: number } = {};
    let anomalyScope: 'process' | 'fleet' = 'process';
    let warmupDays: number | undefined;
    let successStepUp: 'off' | 'suspicious' | 'stuffing' | undefined;
    const only: string[] = [];
    for (let i = 0; i < rest.length; i++) {
      const flag = rest[i]!;
      const value = rest[++i];
      const numeric = ATTACK_NUMBER_FLAGS.get(flag);
      if (numeric !== undefined) {
        const n = numeric.parse(flag, value);
        if (typeof n === 'string') {
          output.err(`${n}\n\n${this.usage}`);
          return EXIT_USAGE;
        }
        numbers[numeric.option] = n;
      } else if (flag === '--anomaly-scope' && (value === 'process' || value === 'fleet')) {
        anomalyScope = value;
      } else if (flag === '--warmup-days' && value !== undefined && /^\d{1,2}$/.test(value)) {
        warmupDays = Number(value);
      } else if (flag === '--step-up' && (value === 'off' || value === 'suspicious' || value === 'stuffing')) {
        successStepUp = value;
      } else if (flag === '--scenario' && value !== undefined && SCENARIO_NAMES.includes(value)) {
        only.push(value);
      } else {
        const why =
          flag === '--scenario'
            ? `unknown scenario ${JSON.stringify(value ?? '')}`
            : flag === '--anomaly-scope'
              ? `--anomaly-scope takes process or fleet, got ${JSON.stringify(value ?? '')}`
              : flag === '--warmup-days'
                ? `--warmup-days takes a whole number of days from 0 to 99, got ${JSON.stringify(value ?? '')}`
                : flag === '--step-up'
                  ? `--step-up takes off, suspicious or stuffing, got ${JSON.stringify(value ?? '')}`
                  : `unexpected argument ${JSON.stringify(flag)}`;
        output.err(`sluice simulate: ${why}\n\n${this.usage}`);
        return EXIT_USAGE;
      }
    }
    const options: SimulateOptions = {
      seed: 1,
      users: 10_000,
      servers: 1,
      ...numbers,
      only,
      anomalyScope,
      ...(warmupDays === undefined ? {} : { warmupDays }),
      ...(successStepUp === undefined ? {} : { successStepUp }),
    };
    const results = await simulateAttacks(options, (r) => output.err(`  ${r.name}: done\n`));
    output.out(formatResults(options, results));
    return 0;
  },
};

/** Exit code for a config that does not validate (or a service that could not start). */
export const EXIT_CONFIG = 1;

const SERVE_KEYS = [
  'config',
  'mergeDomainConfig',
  'host',
  'port',
  'grpcPort',
  'adminPort',
  'adminHost',
  'adminToken',
  'adminHosts',
  'adminMaxEventStreams',
  'adminEventStreamMs',
  'grpcMaxConnectionAgeMs',
  'grpcMaxConnectionAgeGraceMs',
  'grpcMaxConnectionIdleMs',
  'grpcMaxConcurrentStreams',
  'grpcKeepaliveTimeMs',
  'grpcKeepaliveTimeoutMs',
  'grpcMaxPendingCalls',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'keepAliveTimeoutMs',
  'maxConnections',
  'maxConnectionsPerAddress',
  'grpcMaxPendingCallsPerConnection',
  'grpcMaxPendingCallsPerAddress',
  'grpcMaxPendingBytes',
  'grpcMaxPendingBytesPerAddress',
  'drainMs',
  'grpcTlsCert',
  'grpcTlsKey',
  'grpcTlsClientCa',
  'redis',
  'redisCluster',
  'redisSentinel',
  'redisPerSecond',
  'region',
  'regionPeers',
  'regionExchangeMs',
  'redisPrefix',
  'redisUsername',
  'redisPassword',
  'redisTls',
  'redisTlsCa',
  'redisTimeoutMs',
  'redisConnectTimeoutMs',
  'failureMode',
  'maxKeys',
  'memoryOnFull',
  'clock',
  'maxBodyBytes',
  'maxConfigBytes',
  'maxRules',
  'logLevel',
  'watch',
  'maxDetailedSeries',
  'shadowMode',
  'strictDomains',
  'nearLimitRatio',
  'stopCacheKeyIncrementWhenOverlimit',
  'answers',
  'limitResponseHeadersEnabled',
  'limitLimitHeader',
  'limitRemainingHeader',
  'limitResetHeader',
  'demoUrl',
] as const;

// The service's modules load only when a service command runs: they need the optional dependencies
// (yaml, pino, prom-client), and `sluice demo` must work without them.
const SERVICE_DEPENDENCIES = ['yaml', 'pino', 'prom-client'];

/** A service module that could not load because an optional dependency is not installed. */
class MissingDependencyError extends Error {}

/** Imports a service module; a missing optional dependency becomes one line saying what to install. */
async function serviceImport<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((e as Error).message)?.[1];
    if (
      (e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' &&
      missing !== undefined &&
      SERVICE_DEPENDENCIES.includes(missing)
    ) {
      throw new MissingDependencyError(
        `the service needs the dependency '${missing}', which is not installed (@sluice/serve depends on it: was it pruned?); install it with: npm install ${SERVICE_DEPENDENCIES.join(' ')}`,
      );
    }
    throw e;
  }
}

async function serverModules() {
  const [settings, config, notes] = await serviceImport(() =>
    Promise.all([
      import('../server/config/settings.js'),
      import('../server/config/config.js'),
      import('../server/config/config-notes.js'),
    ]),
  );
  return { settings, config, notes };
}

/** What went wrong at start-up, in one line: a taken port names the setting that moves it. */
function startError(
  e: Error & { code?: string; port?: number; address?: string },
  ports: { port: number; grpcPort: number; adminPort: number },
): string {
  if (e.code !== 'EADDRINUSE' && e.code !== 'EACCES') return e.message;
  const setting =
    e.port === ports.grpcPort
      ? '--grpc-port (or SLUICE_GRPC_PORT)'
      : e.port === ports.adminPort
        ? '--admin-port (or SLUICE_ADMIN_PORT; -1 disables it)'
        : '--port (or SLUICE_PORT)';
  const what = e.code === 'EADDRINUSE' ? 'is already in use' : 'needs privileges this user lacks';
  return `port ${e.port ?? '?'} on ${e.address ?? 'this host'} ${what}; choose another with ${setting}`;
}

const serve: Command = {
  summary: 'run the rate limit service: Envoy RLS gRPC, HTTP JSON, nginx auth_request, metrics, dashboard',
  usage: '', // filled in below from the settings table
  async run(args, output) {
    const { settings: S, config: C } = await serverModules();
    let settings;
    try {
      settings = S.readSettings(args, process.env, SERVE_KEYS);
    } catch (e) {
      output.err(`sluice serve: ${(e as Error).message}\n`);
      return EXIT_USAGE;
    }
    const { startService } = await serviceImport(() => import('../server/serve.js'));
    let running;
    try {
      running = await startService(settings);
    } catch (e) {
      if (e instanceof C.ConfigError)
        output.err(`sluice serve: the config is invalid:\n${e.problems.map((p) => `  ${p}`).join('\n')}\n`);
      else output.err(`sluice serve: ${startError(e as Error, settings)}\n`);
      return EXIT_CONFIG;
    }
    return new Promise<number>((resolve) => {
      let signalled = false;
      const stop = (signal: string) => {
        if (signalled) {
          // A second SIGTERM or SIGINT: the operator (or kubelet) wants it gone now, not after the drain.
          running.log.warn({ signal }, 'second signal: exiting at once');
          process.exit(1);
        }
        signalled = true;
        running.log.info({ signal, drainMs: settings.drainMs }, 'signal received');
        void running.close(undefined, settings.drainMs).then(() => resolve(0));
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGHUP', () => void running.reload('SIGHUP'));
    });
  },
};

const checkConfig: Command = {
  summary: 'validate a service config and list every problem with file:line:column',
  usage:
    'usage: sluice check-config --config <file or folder> [--merge-domain-config true] [--max-config-bytes N] [--max-rules N]\n\nValidates without serving. Prints every problem, one per line, and exits 1 if there is any.\n',
  async run(args, output) {
    const { settings: S, config: C, notes: N } = await serverModules();
    let path: string;
    let mergeDomains: boolean;
    let maxBytes: number;
    let maxRules: number;
    try {
      ({
        config: path,
        mergeDomainConfig: mergeDomains,
        maxConfigBytes: maxBytes,
        maxRules,
      } = S.readSettings(args, process.env, ['config', 'mergeDomainConfig', 'maxConfigBytes', 'maxRules']));
    } catch (e) {
      output.err(`sluice check-config: ${(e as Error).message}\n`);
      return EXIT_USAGE;
    }
    try {
      const cfg = C.loadConfig(path, { mergeDomains, maxBytes, maxRules });
      const rules = [...cfg.domains.values()].reduce((n, d) => n + d.rules.length, 0);
      for (const note of N.configNotes(cfg)) output.err(`warning: ${note.message}\n`);
      output.out(`ok: ${cfg.files.length} file(s), ${cfg.domains.size} domain(s), ${rules} rule(s)\n`);
      return 0;
    } catch (e) {
      if (!(e instanceof C.ConfigError)) throw e;
      output.err(`${e.problems.join('\n')}\n${e.problems.length} problem(s) found\n`);
      return EXIT_CONFIG;
    }
  },
};

/** Every subcommand by name. A new one is one entry here. */
export const COMMANDS: Readonly<Record<string, Command>> = { demo, serve, 'check-config': checkConfig, simulate };

/** The usage of `serve` lists every setting from the one table in server/config/settings.ts. */
export async function serveUsage(): Promise<string> {
  const { settings: S } = await serverModules();
  return `usage: sluice serve --config <file or folder> [options]\n\nEvery option can also be set by its environment variable; a flag wins.\n\n${S.settingsHelp(SERVE_KEYS)}\n\nSignals: SIGTERM/SIGINT drain (--drain-ms) and stop, and a second one exits at once; SIGHUP reloads the config (and re-reads the gRPC TLS files).\n`;
}

export function helpText(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((n) => n.length));
  return [
    'usage: sluice <command> [options]',
    '',
    'Commands:',
    ...names.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name]!.summary}`),
    '',
    'Options:',
    '  -h, --help     show this help (or `sluice <command> --help` for one command)',
    '  -v, --version  print the version',
    '',
  ].join('\n');
}

function version(): string {
  // Two levels up from both src/cli/ and dist/cli/ is the package root.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h';

/** Dispatches `argv` (without node and the script path) and resolves to the process exit code. */
export async function runCli(argv: readonly string[], output: Output): Promise<number> {
  const [name, ...args] = argv;
  if (isHelp(name) || name === 'help') {
    output.out(helpText());
    return 0;
  }
  if (name === '--version' || name === '-v') {
    output.out(`${version()}\n`);
    return 0;
  }
  if (name === undefined) {
    output.err(`sluice: missing command\n\n${helpText()}`);
    return EXIT_USAGE;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    const known = Object.keys(COMMANDS).join(', ');
    output.err(
      `sluice: unknown command ${JSON.stringify(name)}; known commands: ${known}. Run \`sluice --help\` for usage.\n`,
    );
    return EXIT_USAGE;
  }
  try {
    // `sluice <command> --help` and `sluice simulate attacks --help` alike: help anywhere is help, as --help promises.
    if (args.some(isHelp)) {
      output.out(command === serve ? await serveUsage() : command.usage);
      return 0;
    }
    return await command.run(args, output);
  } catch (e) {
    if (!(e instanceof MissingDependencyError)) throw e;
    output.err(`sluice ${name}: ${e.message}\n`);
    return EXIT_CONFIG;
  }
}
