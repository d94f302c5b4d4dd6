// Checks the `sluice` command line: dispatch, help, errors and exit codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EXIT_USAGE, runCli } from './cli.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

test('sluice demo prints one table per trace', async () => {
  const { code, out, err } = await run('demo');
  assert.equal(code, 0);
  assert.equal(err, '');
  assert.match(out, /boundary attack: /);
  assert.match(out, /→ fixed-window admitted 200 /);
});

test('`sluice simulate attacks --help` (help after a subcommand) prints the usage and exits 0, as `sluice --help` advertises', async () => {
  for (const argv of [
    ['simulate', 'attacks', '--help'],
    ['simulate', 'distributed', '-h'],
    ['simulate', 'accuracy', '--seed', '2', '--help'],
  ]) {
    const r = await run(...argv);
    assert.equal(r.code, 0, `${argv.join(' ')}: ${r.err}`);
    assert.equal(r.err, '');
    assert.match(r.out, /^usage: sluice simulate attacks /);
  }
});

test('--help lists the commands; `<command> --help` shows its usage', async () => {
  const help = await run('--help');
  assert.equal(help.code, 0);
  assert.match(help.out, /usage: sluice <command>/);
  assert.match(help.out, /\n {2}demo {2}/);
  const demoHelp = await run('demo', '-h');
  assert.equal(demoHelp.code, 0);
  assert.match(demoHelp.out, /usage: sluice demo/);
});

test('an unknown command, a missing one, or a stray argument is a usage error', async () => {
  const unknown = await run('frobnicate');
  assert.equal(unknown.code, EXIT_USAGE);
  assert.equal(unknown.out, '');
  assert.match(unknown.err, /unknown command "frobnicate"; known commands: demo, serve, check-config, simulate/);
  assert.equal((await run()).code, EXIT_USAGE);
  assert.equal((await run('toString')).code, EXIT_USAGE); // not an inherited property
  const stray = await run('demo', 'extra');
  assert.equal(stray.code, EXIT_USAGE);
  assert.match(stray.err, /unexpected argument "extra"/);
});

test('--version prints the package version', async () => {
  const { code, out } = await run('--version');
  assert.equal(code, 0);
  assert.match(out, /^\d+\.\d+\.\d+/);
});

test('the bin sets the exit code and writes errors to stderr', () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', main, 'nope'], { encoding: 'utf8' });
  assert.equal(result.status, EXIT_USAGE);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /unknown command "nope"/);
});

test('sluice simulate attacks: a small seeded run prints both tables, and the same seed prints the same', async () => {
  const args = ['simulate', 'attacks', '--seed', '7', '--users', '300', '--scenario', 'brute-force'];
  const a = await run(...args);
  assert.equal(a.code, 0);
  assert.match(a.out, /^sluice simulate attacks --seed 7 --users 300\n/);
  assert.match(a.out, /\nbrute-force +10000 +\d+ \(/);
  assert.match(a.out, /Legitimate users who met each step/);
  assert.doesNotMatch(a.out, /credential-stuffing/);
  assert.equal((await run(...args)).out, a.out);
});

test('sluice simulate attacks: --leak-coverage and --leaked-pair-share reach the run, and its header says so', async () => {
  const a = await run(
    'simulate',
    'attacks',
    '--seed',
    '7',
    '--users',
    '300',
    '--scenario',
    'brute-force',
    '--leak-coverage',
    '0.5',
    '--leaked-pair-share',
    '0',
  );
  assert.equal(a.code, 0, a.err);
  assert.match(a.out, /^sluice simulate attacks --seed 7 --users 300 --leak-coverage 0.5 --leaked-pair-share 0\n/);
  assert.match(
    a.out,
    /0% with their own account\+password pair in the leaked corpus,\nwhich holds 50% of a stuffer's pairs/,
  );
});

test('sluice simulate: usage errors', async () => {
  assert.match((await run('simulate')).err, /expected 'attacks', 'accuracy' or 'distributed', got ""/);
  assert.match((await run('simulate', 'attacks', '--users', '0')).err, /--users needs a positive integer, got "0"/);
  assert.match((await run('simulate', 'attacks', '--scenario', 'nope')).err, /unknown scenario "nope"/);
  assert.match((await run('simulate', 'attacks', '--fast')).err, /unexpected argument "--fast"/);
  assert.equal((await run('simulate', 'attacks', '--seed')).code, EXIT_USAGE);
  assert.match(
    (await run('simulate', 'attacks', '--leak-coverage', '1.5')).err,
    /--leak-coverage takes a fraction from 0 to 1, got "1.5"/,
  );
  assert.match(
    (await run('simulate', 'attacks', '--leak-coverage', '-0.1')).err,
    /--leak-coverage takes a fraction from 0 to 1, got "-0.1"/,
  );
  assert.match(
    (await run('simulate', 'attacks', '--leaked-pair-share', 'lots')).err,
    /--leaked-pair-share takes a fraction from 0 to 1, got "lots"/,
  );
  assert.equal((await run('simulate', 'attacks', '--leaked-pair-share')).code, EXIT_USAGE);
});

test('regression: sluice serve --help lists every setting of settings.ts with its flag and environment variable (new settings were once left out of the CLI)', async () => {
  const { SETTINGS } = await import('../server/config/settings.js');
  const { code, out } = await run('serve', '--help');
  assert.equal(code, 0);
  for (const { flag, env } of Object.values(SETTINGS)) {
    assert.match(out, new RegExp(`\\n  ${flag} <v> +${env} `), `${flag} is missing from sluice serve`);
  }
});

test('sluice serve without a config, or with an unknown flag, is a usage error', async () => {
  const saved = process.env.SLUICE_CONFIG;
  delete process.env.SLUICE_CONFIG;
  try {
    const none = await run('serve');
    assert.equal(none.code, EXIT_USAGE);
    assert.match(none.err, /--config \(or SLUICE_CONFIG\) is required/);
    const bad = await run('serve', '--config', 'x.yaml', '--prot', '1');
    assert.equal(bad.code, EXIT_USAGE);
    assert.match(bad.err, /unknown option "--prot"/);
  } finally {
    if (saved !== undefined) process.env.SLUICE_CONFIG = saved;
  }
});

test('sluice simulate accuracy and distributed: usage errors name the flag and value', async () => {
  assert.match(
    (await run('simulate', 'accuracy', '--buckets', '0')).err,
    /--buckets needs a positive integer, got "0"/,
  );
  assert.match(
    (await run('simulate', 'accuracy', '--mix', 'weird')).err,
    /unknown mix "weird"; known mixes: typical, near-limit/,
  );
  assert.match(
    (await run('simulate', 'distributed', '--shape', 'flat')).err,
    /unknown shape "flat"; known shapes: uniform, hot-key, bursts, node-killed/,
  );
  assert.match((await run('simulate', 'distributed', '--strategy', 'central')).err, /unknown strategy "central"/);
  assert.match(
    (await run('simulate', 'distributed', '--redis', 'localhost')).err,
    /--redis needs a redis:\/\/ URL, got "localhost"/,
  );
  assert.equal((await run('simulate', 'distributed', '--nodes', 'x')).code, EXIT_USAGE);
  assert.match(
    (await run('simulate', 'distributed', '--lease-ttl', '2000')).err,
    /--lease-ttl must be at most the 1 s window, got 2000/,
  );
});
