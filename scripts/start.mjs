#!/usr/bin/env node
// `npm start`: the service on the example config (memory store, dashboard on :8080) and, beside it, the
// login demo (:3000) that the dashboard links to. Ctrl-C or SIGTERM stops both.
import { spawn } from 'node:child_process';

const demoPort = process.env.DEMO_PORT ?? '3000';
const tsx = ['--import', 'tsx'];
const children = [
  spawn(process.execPath, [...tsx, 'demo/login/main.ts'], { stdio: 'inherit', env: { ...process.env, PORT: demoPort } }),
  spawn(process.execPath, [...tsx, 'src/cli/main.ts', 'serve', '--config', 'examples/policies.yaml', '--demo-url', `http://127.0.0.1:${demoPort}/`, ...process.argv.slice(2)], { stdio: 'inherit' }),
];
let code = 0;
for (const child of children) {
  child.on('exit', (status, signal) => {
    code ||= status ?? (signal ? 1 : 0);
    for (const other of children) if (other.exitCode === null && other.signalCode === null) other.kill('SIGTERM');
    if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(code);
  });
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => children.forEach((c) => c.kill('SIGTERM')));
