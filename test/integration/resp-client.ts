// A minimal RESP2 client for tests: enough of Redis to call SET and DEL on a real server without making
// ioredis or node-redis a dependency of sluice. Replies arrive in order, so a FIFO of resolvers suffices.
import { connect, type Socket } from 'node:net';

type Reply = string | number | null | Reply[] | Error;

export class RespClient {
  private readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private readonly waiting: Array<(r: Reply) => void> = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const parsed = parse(this.buffer, 0);
        if (parsed === undefined) break;
        this.buffer = this.buffer.subarray(parsed.end);
        this.waiting.shift()!(parsed.value);
      }
    });
  }

  static open(port = 6379, host = '127.0.0.1'): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new RespClient(socket)));
      socket.once('error', reject);
    });
  }

  command(...args: Array<string | number>): Promise<Reply> {
    const parts = args.map(String);
    let out = `*${parts.length}\r\n`;
    for (const p of parts) out += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
    return new Promise((resolve, reject) => {
      this.waiting.push((r) => (r instanceof Error ? reject(r) : resolve(r)));
      this.socket.write(out);
    });
  }

  close(): void {
    this.socket.end();
  }
}

function parse(buf: Buffer, at: number): { value: Reply; end: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const line = buf.toString('utf8', at + 1, eol);
  switch (String.fromCharCode(buf[at]!)) {
    case '+': return { value: line, end: eol + 2 };
    case '-': return { value: new Error(line), end: eol + 2 };
    case ':': return { value: Number(line), end: eol + 2 };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, end: eol + 2 };
      if (buf.length < eol + 2 + n + 2) return undefined;
      return { value: buf.toString('utf8', eol + 2, eol + 2 + n), end: eol + 2 + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, end: eol + 2 };
      const items: Reply[] = [];
      let end = eol + 2;
      for (let i = 0; i < n; i++) {
        const item = parse(buf, end);
        if (item === undefined) return undefined;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default: throw new Error(`unexpected RESP type byte ${buf[at]}`);
  }
}
