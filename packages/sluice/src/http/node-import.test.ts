// Regression: importing sluice's node:http support built a response. To find where node:http keeps a
// response's header fields, the module made a probe `new OutgoingMessage()` at import and called setHeader
// on it; that response of another shape widened V8's feedback for node:http's own code, and every request on
// the server paid about 0.5 k instructions for it (bench/http-instructions.mjs, `monotonicClock`, before and
// after). Now the store is learnt from the first real response a field is set on. This file imports the
// module itself, after counting what touches OutgoingMessage, so it runs in a process where nothing
// imported it before.
import assert from 'node:assert/strict';
import { IncomingMessage, OutgoingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { after, test } from 'node:test';

// Counts setHeader calls from before the first import on. The counter stays installed for the whole file: the
// module keeps the setHeader it found at import as the one it may bypass, so swapping it back mid-file would
// make every later field look as if an instrumentation had wrapped setHeader.
const setHeader = OutgoingMessage.prototype.setHeader;
let calls = 0;
OutgoingMessage.prototype.setHeader = function (
  this: OutgoingMessage,
  ...args: Parameters<OutgoingMessage['setHeader']>
) {
  calls++;
  return setHeader.apply(this, args);
};
after(() => {
  OutgoingMessage.prototype.setHeader = setHeader;
});

test("importing sluice/http sets no header on a probe response (probe at import widened node:http's feedback)", async () => {
  await import('./node.js');
  await import('./index.js');
  await import('../middleware/node-http/index.js');
  await import('../middleware/express/index.js');
  assert.equal(calls, 0, 'setHeader was called while importing');
});

test('the first trusted field goes through setHeader, and the next ones take the fast store', async () => {
  const { NodeHeaders } = await import('./node.js');
  const response = () => {
    const req = new IncomingMessage(new Socket());
    req.method = 'GET';
    return new ServerResponse(req);
  };
  const first = response();
  const seen: string[] = [];
  const original = first.setHeader.bind(first);
  // A wrapped setHeader is never bypassed, so this one only counts; the learning call is the unwrapped one below.
  first.setHeader = (name: string, value: number | string | readonly string[]) => (
    seen.push(name), original(name, value)
  );
  new NodeHeaders(first).setTrustedHeader('ratelimit', 'a');
  assert.deepEqual(seen, ['ratelimit']);

  const learning = response();
  new NodeHeaders(learning).setTrustedHeader('ratelimit', 'b');
  const sym = Object.getOwnPropertySymbols(learning).find((s) => s.description === 'kOutHeaders')!;
  assert.equal(
    Object.getPrototypeOf((learning as unknown as Record<symbol, object>)[sym]),
    null,
    'learnt through setHeader: its own store',
  );
  const fast = response();
  new NodeHeaders(fast).setTrustedHeader('ratelimit', 'c');
  assert.notEqual(Object.getPrototypeOf((fast as unknown as Record<symbol, object>)[sym]), null, 'then the fast store');
  assert.equal(fast.getHeader('ratelimit'), 'c');
});
