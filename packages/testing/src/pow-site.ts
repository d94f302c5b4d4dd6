// A minimal site around the proof-of-work API for the browser test and benchmark: a login form with the
// <sluice-pow> widget, a challenge endpoint and a verifying POST. Not the demo app; no guard here.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createChallenge, MemorySpentStore, verifySolution } from '../../pow/src/index.js';

export const ROOT = join(import.meta.dirname, '../../..');
export const SECRET = 'browser test secret, long enough';

export interface Site {
  url: string;
  /** Difficulty of the challenges the endpoint hands out; tests change it. */
  difficulty: number;
  server: Server;
  close(): Promise<void>;
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>pow test</title>
<form id="login" method="post" action="/login">
  <input name="username" value="alice"><input name="password" type="password" value="pw">
  <sluice-pow challenge-url="/pow/challenge" params="username" name="pow"></sluice-pow>
  <button id="go">Log in</button>
</form>
<script src="/sluice-pow.js"></script>`;

export async function startSite(files: Record<string, string> = {}): Promise<Site> {
  const store = new MemorySpentStore();
  const site = { difficulty: 20_000 } as Site;
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (url.pathname === '/') return send(200, 'text/html', PAGE);
    if (url.pathname === '/blank') return send(200, 'text/html', '<!doctype html><title>blank</title>');
    if (url.pathname === '/sluice-pow.js')
      return send(200, 'text/javascript', readFileSync(join(ROOT, 'packages/pow/dist/browser/sluice-pow.js'), 'utf8'));
    if (Object.hasOwn(files, url.pathname))
      return send(200, 'text/javascript', readFileSync(files[url.pathname]!, 'utf8'));
    if (url.pathname === '/pow/challenge') {
      const ch = createChallenge({
        secret: SECRET,
        difficulty: Number(url.searchParams.get('difficulty')) || site.difficulty,
        scope: `login:${url.searchParams.get('username') ?? ''}`,
        ttlMs: 120_000,
      });
      return send(200, 'application/json', JSON.stringify(ch));
    }
    if (url.pathname === '/login' && req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const form = new URLSearchParams(body);
      const r = await verifySolution(form.get('pow'), {
        secret: SECRET,
        scope: `login:${form.get('username')}`,
        store,
      });
      return send(r.ok ? 200 : 403, 'text/html', `<!doctype html><p id="result">${r.ok ? 'ok' : r.reason}</p>`);
    }
    send(404, 'text/plain', 'not found');
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  site.url = `http://127.0.0.1:${address.port}`;
  site.server = server;
  site.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return site;
}
