// An attacker for the fairness tests (issue 45, findings 2 and 3), run as a child process so that its own
// thousands of sockets cost the test's process (where the service runs) nothing but the service's side.
//
//   node idle-attacker.mjs <grpc|http> <port> <per-address> <address>...
//
// From each loopback address (Linux routes all of 127/8 to lo) it holds <per-address> idle connections to
// 127.0.0.1:<port>: gRPC, an HTTP/2 session that made one health Check; HTTP, a keep-alive socket that
// made one GET /healthz. Whatever closes is opened again 100-300 ms later, for as long as it runs. Every
// 250 ms it prints a JSON line: {"held": connections answered and open, "opened", "closed"}. It stops on
// SIGTERM or when its stdin ends (the test that started it went away).
import http2 from 'node:http2';
import net from 'node:net';

const [kind, portText, perAddressText, ...addresses] = process.argv.slice(2);
const port = Number(portText);
const perAddress = Number(perAddressText);
if ((kind !== 'grpc' && kind !== 'http') || !(port > 0) || !(perAddress > 0) || addresses.length === 0) {
  console.error('usage: idle-attacker.mjs <grpc|http> <port> <per-address> <address>...');
  process.exit(2);
}

/** Connecting at most this many at once: more would overflow the listener's backlog (SYN retries cost 1 s). */
const CONNECTING_AT_ONCE = 128;
const stats = { held: 0, opened: 0, closed: 0 };
const ends = new Set();
let connecting = 0;
let stopped = false;
/** Addresses owed a connection, one entry per connection. */
const owed = [];

function pump() {
  while (!stopped && connecting < CONNECTING_AT_ONCE && owed.length > 0) open(owed.shift());
}

function reopen(localAddress) {
  owed.push(localAddress);
  pump();
}

/** One connection from `localAddress`; `settled` once it was answered (held) or failed. */
function open(localAddress) {
  connecting++;
  stats.opened++;
  let answered = false;
  let connected = true;
  const settled = () => {
    if (!connected) return;
    connected = false;
    connecting--;
    pump();
  };
  const closed = () => {
    settled();
    if (answered) stats.held--;
    answered = false;
    stats.closed++;
    ends.delete(end);
    if (!stopped) setTimeout(reopen, 100 + 200 * Math.random(), localAddress);
  };
  const held = () => {
    if (answered) return;
    answered = true;
    stats.held++;
    settled();
  };
  let end;
  if (kind === 'grpc') {
    const session = http2.connect(`http://127.0.0.1:${port}`, {
      createConnection: () => net.connect({ port, host: '127.0.0.1', localAddress }),
    });
    session.on('error', () => {});
    session.once('goaway', () => session.destroy());
    session.once('close', closed);
    const call = session.request({
      ':method': 'POST',
      ':path': '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    call.on('error', () => {});
    call.once('response', held);
    call.resume();
    call.end(Buffer.from([0, 0, 0, 0, 0]));
    end = () => session.destroy();
  } else {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
    );
    socket.on('error', () => {});
    socket.once('data', held);
    socket.resume();
    socket.once('close', closed);
    end = () => socket.destroy();
  }
  ends.add(end);
}

function stop() {
  if (stopped) return;
  stopped = true;
  clearInterval(report);
  for (const end of ends) end();
  setTimeout(() => process.exit(0), 200).unref();
}

for (const address of addresses) for (let i = 0; i < perAddress; i++) owed.push(address);
pump();
const report = setInterval(() => process.stdout.write(`${JSON.stringify(stats)}\n`), 250);
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
