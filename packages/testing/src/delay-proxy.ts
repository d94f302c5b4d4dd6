// A TCP proxy that gives a link between regions its delay: every byte is forwarded `delayMs` after it
// arrives, each way, in order. cut() partitions the link: 'reset' closes every connection and refuses
// new ones (a route gone), 'blackhole' keeps TCP up and drops every byte (a frozen link, found only by
// timeouts). heal() restores it.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

export type Cut = 'reset' | 'blackhole';

export class DelayProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private cutMode: Cut | undefined;
  /** Bytes forwarded each way (toward the target, back from it): traffic between regions. */
  readonly bytes = { up: 0, down: 0 };
  /** The longest a chunk took to be forwarded (the delay plus this process's timer lateness): the link's real delay. */
  maxDelayMs = 0;
  port = 0;

  constructor(
    private readonly targetPort: number,
    readonly delayMs: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => this.accept(client));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as { port: number }).port;
  }

  private accept(client: Socket): void {
    if (this.cutMode === 'reset') {
      client.destroy();
      return;
    }
    const upstream = createConnection(this.targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.setNoDelay(true);
      s.on('error', () => {});
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    this.pipe(client, upstream, 'up');
    this.pipe(upstream, client, 'down');
  }

  /** Forwards from → to, each chunk delayMs after it arrived; the order is kept (one delay per chunk, FIFO). */
  private pipe(from: Socket, to: Socket, way: 'up' | 'down'): void {
    from.on('data', (chunk: Buffer) => {
      if (this.cutMode !== undefined) return;
      const arrived = performance.now();
      setTimeout(() => {
        if (this.cutMode !== undefined || to.destroyed) return;
        this.maxDelayMs = Math.max(this.maxDelayMs, performance.now() - arrived);
        this.bytes[way] += chunk.length;
        to.write(chunk);
      }, this.delayMs);
    });
  }

  cut(mode: Cut = 'reset'): void {
    this.cutMode = mode;
    if (mode === 'reset') for (const s of this.sockets) s.destroy();
  }

  heal(): void {
    // A blackholed connection has lost bytes mid-stream: it cannot carry on; the client reconnects.
    if (this.cutMode === 'blackhole') for (const s of this.sockets) s.destroy();
    this.cutMode = undefined;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server !== undefined) await new Promise((r) => this.server!.close(r));
  }
}
