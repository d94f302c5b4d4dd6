/**
 * The demo login site: sluice's guard decides each attempt, proof of work (@sluice/pow) answers
 * 'challenge', TOTP answers 'mfa', and 'block' refuses. One node:http server, no framework.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createChallenge, difficultyFor, MemorySpentStore, verifySolution } from '@sluice/pow';
import { checkPassword, checkTotp, makeAccount, totpUri, type Account } from './accounts.js';
import { loadGuard, stepsUp, type GuardDecision } from './guard-contract.js';
import { PAGE_SCRIPT, pageHtml } from './page.js';

const WIDGET = new URL('../../packages/pow/dist/browser/sluice-pow.js', import.meta.url);
const MAX_BODY = 4096;
/** Wrong-password attempts one "Run attack" sends, each against a random account. */
const ATTACK_ATTEMPTS = 30;
/** Cap the guard's bits so a misconfiguration cannot ask a browser for hours of work. */
const MAX_POW_DIFFICULTY = difficultyFor({ risk: 100 });

export interface DemoOptions {
  port?: number;
  host?: string;
}

export interface Demo {
  url: string;
  server: Server;
  guardKind: string;
  account: Account;
  close(): Promise<void>;
}

export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const guardSecret = process.env.DEMO_GUARD_SECRET ?? randomBytes(32).toString('hex');
  const powSecret = process.env.DEMO_POW_SECRET ?? randomBytes(32).toString('hex');
  const { guard, kind } = await loadGuard(guardSecret);
  const spent = new MemorySpentStore();
  const alice = makeAccount('alice', 'correct horse battery staple');
  const accounts = new Map([[alice.name, alice]]);
  const widget = readFileSync(WIDGET, 'utf8');

  async function login(body: Record<string, unknown>, ip: string): Promise<[number, object]> {
    const account = typeof body.username === 'string' ? body.username.trim().toLowerCase().slice(0, 64) : '';
    const password = typeof body.password === 'string' ? body.password : '';
    if (!account || !password) return [400, { status: 'denied' }];
    const d: GuardDecision = await guard.check({ account, ip });
    const decision = { action: d.action, reasons: d.reasons, delayMs: d.delayMs };
    if (d.action === 'block') return [429, { status: 'blocked', retryAfterMs: d.retryAfterMs, decision }];
    if (d.action === 'challenge') {
      const scope = `login:${account}`;
      // The guard branch speaks in leading zero bits; @sluice/pow takes expected hashes, 2^bits.
      const difficulty =
        typeof d.challenge === 'number' ? Math.min(MAX_POW_DIFFICULTY, 2 ** d.challenge) : difficultyFor();
      const fresh = () => createChallenge({ secret: powSecret, difficulty, scope, ttlMs: 120_000 });
      if (body.pow === undefined) return [401, { status: 'challenge', challenge: fresh(), decision }];
      const r = await verifySolution(body.pow, { secret: powSecret, scope, store: spent });
      if (!r.ok) return [401, { status: 'challenge', challenge: fresh(), error: r.reason, decision }];
    }
    if (d.action === 'mfa' && typeof body.totp !== 'string') return [401, { status: 'mfa', decision }];
    if (d.delayMs > 0) await new Promise((r) => setTimeout(r, Math.min(d.delayMs, 30_000)));
    const user = accounts.get(account);
    const passwordOk = checkPassword(user, password);
    const mfaOk = d.action !== 'mfa' || (passwordOk && (await checkTotp(user, String(body.totp))));
    const success = passwordOk && mfaOk;
    if (!success) {
      // accountExists feeds the guard's unknown-account monitor; the answer stays the same either way.
      await guard.record({ account, ip, success: false, password, accountExists: user !== undefined });
      if (d.action === 'mfa') return [401, { status: 'mfa', error: 'failed', decision }];
      return [401, { status: 'denied', decision }];
    }
    // Risk at the moment of success: a correct password on a stranger's path while the guard sees stuffing
    // is stepped up, and the login completes only once the second factor is passed.
    const recorded = await guard.record({
      account,
      ip,
      success: true,
      ...(d.action === 'mfa' ? { secondFactor: true } : {}),
    });
    if (stepsUp(recorded)) {
      const stepUp = { ...decision, action: 'mfa', reasons: recorded.reasons };
      if (typeof body.totp !== 'string') return [401, { status: 'mfa', decision: stepUp }];
      if (!(await checkTotp(user, body.totp))) {
        await guard.record({ account, ip, success: false });
        return [401, { status: 'mfa', error: 'failed', decision: stepUp }];
      }
      await guard.record({ account, ip, success: true, secondFactor: true });
    }
    return [200, { status: 'ok', account, decision }];
  }

  // "Run attack" sends its attempts from simulated addresses (TEST-NET-3, 203.0.113.0/24; a new one per run),
  // never from the visitor's: an attack from their own address would lock them out of their own login.
  let attacks = 0;
  async function attack(): Promise<[number, object]> {
    const from = `203.0.113.${(attacks++ % 254) + 1}`;
    // One after another, as a bot's loop sends them: each attempt meets what the guard learnt from the last.
    const answers: object[] = [];
    for (let i = 0; i < ATTACK_ATTEMPTS; i++)
      answers.push(
        (await login({ username: `user${randomBytes(3).readUIntBE(0, 3)}`, password: `password${i}` }, from))[1],
      );
    return [200, { from, answers }];
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, {
        'content-type': type,
        'cache-control': 'no-store',
        // The widget's worker is a blob: URL; everything else comes from this origin.
        'content-security-policy': "default-src 'self'; worker-src blob:; style-src 'self' 'unsafe-inline'",
      });
      res.end(body);
    };
    if (req.method === 'GET' && url.pathname === '/') {
      return send(
        200,
        'text/html; charset=utf-8',
        pageHtml({ guardKind: kind, account: alice.name, totpSecret: alice.totpSecret, totpUri: totpUri(alice) }),
      );
    }
    if (req.method === 'GET' && url.pathname === '/demo.js') return send(200, 'text/javascript', PAGE_SCRIPT);
    if (req.method === 'GET' && url.pathname === '/sluice-pow.js') return send(200, 'text/javascript', widget);
    if (req.method === 'POST' && url.pathname === '/api/attack') {
      const [status, answer] = await attack();
      return send(status, 'application/json', JSON.stringify(answer));
    }
    if (req.method === 'POST' && url.pathname === '/api/login') {
      let raw = '';
      for await (const chunk of req) {
        raw += chunk;
        if (raw.length > MAX_BODY) return send(413, 'application/json', '{"status":"denied"}');
      }
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      if (typeof body !== 'object' || body === null) return send(400, 'application/json', '{"status":"denied"}');
      const [status, answer] = await login(body as Record<string, unknown>, req.socket.remoteAddress ?? 'unknown');
      return send(status, 'application/json', JSON.stringify(answer));
    }
    send(404, 'text/plain', 'not found');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error(error);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error');
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host}:${port}`,
    server,
    guardKind: kind,
    account: alice,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
