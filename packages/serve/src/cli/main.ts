#!/usr/bin/env node
// The `sluice` bin: runs the command line against the real process and sets its exit code.
import { runCli } from './cli.js';

// `sluice demo | head` closes stdout early; that is not an error worth a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
