// A real HTTP server on 127.0.0.1 that plays a rate-limited API: its own token bucket (written here,
// independent of sluice's), 429 with Retry-After when it is empty, IETF draft-8 RateLimit headers on
// every answer, and a log of every request so tests can check that no call was lost or duplicated.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ApiOptions {
  /** Requests per second the bucket refills. */
  rate: number;
  /** Bucket size: requests admitted back to back from idle. */
  burst: number;
  /** How long each answer takes, so that calls overlap and concurrency can be counted. Default 0. */
  delayMs?: number;
}

export interface Hit {
  id: string;
  method: string;
  /** performance.now() at arrival. */
  at: number;
  status: number;
}

export class RateLimitedApi {
  readonly hits: Hit[] = [];
  url = '';
  private server: Server | undefined;
  private tokens: number;
  private last = performance.now();
  /** Requests being answered now, and the most at any moment. */
  inFlight = 0;
  maxInFlight = 0;
  /** Until this time every request is refused with 429 and Retry-After, whatever the bucket holds. */
  private outageUntil = -Infinity;

  constructor(readonly options: ApiOptions) {
    this.tokens = options.burst;
  }

  /** Refuses everything for `ms`, as an upstream under load does. */
  outage(ms: number): void {
    this.outageUntil = performance.now() + ms;
  }

  get ok(): number {
    return this.hits.filter((h) => h.status === 200).length;
  }

  get refused(): number {
    return this.hits.filter((h) => h.status === 429).length;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const now = performance.now();
      const id = new URL(req.url ?? '/', 'http://x').searchParams.get('id') ?? '';
      const { rate, burst } = this.options;
      this.tokens = Math.min(burst, this.tokens + ((now - this.last) * rate) / 1000);
      this.last = now;
      let status = 200;
      const headers: Record<string, string> = {};
      if (now < this.outageUntil) {
        status = 429;
        headers['retry-after'] = String(Math.ceil((this.outageUntil - now) / 1000));
      } else if (this.tokens >= 1) {
        this.tokens -= 1;
      } else {
        status = 429;
        headers['retry-after'] = String(Math.max(1, Math.ceil((1 - this.tokens) / rate)));
      }
      headers.ratelimit = `"default";r=${Math.floor(this.tokens)};t=${Math.ceil((burst - this.tokens) / rate)}`;
      headers['ratelimit-policy'] = `"default";q=${burst};w=${Math.ceil(burst / rate)}`;
      this.hits.push({ id, method: req.method ?? 'GET', at: now, status });
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      req.resume();
      req.on('end', () => {
        setTimeout(() => {
          this.inFlight--;
          res.writeHead(status, headers);
          res.end(status === 200 ? id : 'rate limited');
        }, this.options.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}
