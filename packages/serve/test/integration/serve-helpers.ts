// Shared by the service's end-to-end tests: a config in a temp folder, a service on free loopback ports,
// a gRPC client built from sluice's own .proto, and the store variants to run every suite against.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { loadRlsDefinition } from '../support/rls-definition.js';
import { startService } from '../../src/server/serve.js';
import type { RunningService } from '../../src/server/serve.js';
import { DEFAULTS } from '../../src/server/config/settings.js';
import type { Settings } from '../../src/server/config/settings.js';
import { redisAvailable } from '../../src/server/config/store-from-settings.js';

export interface Variant {
  readonly name: string;
  readonly settings: Partial<Settings>;
}

/**
 * Memory always; Redis at 127.0.0.1:6379 once this build has `sluice/redis` and ioredis, each run under a
 * fresh key prefix (nothing is flushed). Without them the Redis variant is reported as skipped, not passed.
 */
export async function variants(): Promise<{ run: Variant[]; skipped: string | undefined }> {
  const run: Variant[] = [{ name: 'memory store', settings: {} }];
  if (await redisAvailable()) {
    run.push({
      name: 'redis store',
      settings: {
        redis: 'redis://127.0.0.1:6379',
        redisPrefix: `sluice-test-${process.pid}-${Date.now().toString(36)}`,
      },
    });
    return { run, skipped: undefined };
  }
  return { run, skipped: 'redis store: this build has no sluice/redis + ioredis yet (branch redis)' };
}

export class TempConfig {
  readonly dir = mkdtempSync(join(tmpdir(), 'sluice-serve-'));
  readonly path: string;
  constructor(text: string, name = 'policies.yaml') {
    this.path = join(this.dir, name);
    writeFileSync(this.path, text);
  }
  write(text: string): void {
    writeFileSync(this.path, text);
  }
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Collects the service's JSON log lines, for tests that check what it logged. */
export class LogSink extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    for (const line of chunk.toString().split('\n'))
      if (line) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  }
}

export async function start(
  configPath: string,
  variant: Variant,
  extra: Partial<Settings> = {},
  sampleMs?: number,
): Promise<{ svc: RunningService; logs: LogSink }> {
  const logs = new LogSink();
  const settings: Settings = {
    ...DEFAULTS,
    config: configPath,
    port: 0,
    grpcPort: 0,
    adminPort: 0,
    ...variant.settings,
    ...extra,
  };
  const svc = await startService(settings, { logStream: logs, ...(sampleMs ? { sampleMs } : {}) });
  return { svc, logs };
}

type Unary = (req: object, cb: (err: grpc.ServiceError | null, res: Record<string, unknown>) => void) => void;

export function rlsClient(
  port: number,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): { call(req: object): Promise<any>; raw(bytes: Buffer): Promise<any>; close(): void } {
  const pkg = loadRlsDefinition() as any;
  const Client = pkg.envoy.service.ratelimit.v3.RateLimitService as grpc.ServiceClientConstructor;
  // Over TLS, check the certificate for 'localhost' (the test server's name) rather than send an IP as the server name.
  const options = credentials._isSecure() ? { 'grpc.ssl_target_name_override': 'localhost' } : {};
  const client = new Client(`127.0.0.1:${port}`, credentials, options) as unknown as {
    ShouldRateLimit: Unary;
  } & grpc.Client;
  return {
    call: (req) =>
      new Promise((resolve, reject) => client.ShouldRateLimit(req, (err, res) => (err ? reject(err) : resolve(res)))),
    /** Sends bytes that are not a RateLimitRequest. */
    raw: (bytes) =>
      new Promise((resolve, reject) =>
        client.makeUnaryRequest(
          '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      ),
    close: () => client.close(),
  };
}

/**
 * Waits until the service's /readyz answers 200. startService waits for its Redis client for at most
 * redisConnectTimeoutMs; a Cluster client on a loaded machine can take longer to learn the slots, and with
 * failure mode 'closed' a request before that is refused (a flaky 429 in serve-cluster.test.ts, once).
 */
export async function untilReady(port: number, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline)
      throw new Error(`the service on port ${port} was not ready after ${ms} ms (/readyz ${status})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function post(
  port: number,
  path: string,
  body: string | object,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}
