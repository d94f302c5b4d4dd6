// A real nginx (Debian's package) running one of examples/nginx/*.conf on a spare loopback port, with its
// own prefix folder (temp paths, error log, access log) under `dir`.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

export interface RunningNginx {
  readonly port: number;
  readonly dir: string;
  /** The access log's lines so far (the examples' `sluice` format). */
  accessLog(): string[];
  stop(): Promise<void>;
}

/** Starts nginx on `example` (a file of examples/nginx/), pointed at sluice on `sluicePort` and the app on `backendPort`. */
export async function startNginx(
  example: string,
  dir: string,
  sluicePort: number,
  backendPort: number,
): Promise<RunningNginx> {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const site = readFileSync(new URL(`../../examples/nginx/${example}`, import.meta.url), 'utf8')
    .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${sluicePort};`)
    .replace('listen 127.0.0.1:8000;', `listen 127.0.0.1:${port};`)
    .replace('access_log /var/log/nginx/sluice-access.log sluice;', `access_log ${dir}/access.log sluice;`)
    .replace('proxy_pass http://127.0.0.1:3000;', `proxy_pass http://127.0.0.1:${backendPort};`);
  writeFileSync(join(dir, 'sluice.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ');
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\nevents { worker_connections 128; }\nhttp { access_log off; ${temp} include ${dir}/sluice.conf; }\n`,
  );
  const nginx: ChildProcess = spawn('/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  nginx.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  for (let i = 0; ; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/health-probe`, { headers: { 'x-api-key': 'probe' } });
      break;
    } catch {
      if (i === 100 || nginx.exitCode !== null) throw new Error(`nginx did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    port,
    dir,
    accessLog: () => {
      try {
        return readFileSync(join(dir, 'access.log'), 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
    async stop() {
      if (nginx.exitCode !== null) return;
      nginx.kill('SIGQUIT');
      await new Promise((r) => (nginx.exitCode !== null ? r(null) : nginx.once('exit', r)));
    },
  };
}
