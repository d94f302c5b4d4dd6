// The service's store-trouble log (#45 finding 9): the budget is per outage, so an outage right after a
// blip gets its error line at once, and each recovery line names the server and the whole outage's length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { storeEventLog } from './store-log.js';

function harness() {
  const lines: { level: number; msg: string; server?: string; downMs?: number; unloggedOutages?: number }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  let now = 0;
  const timers: { at: number; f: () => void }[] = [];
  const onEvent = storeEventLog(
    pino({ level: 'info' }, stream),
    { store: 'redis' },
    { now: () => now, setTimer: (f, ms) => timers.push({ at: now + ms, f }) },
  );
  const advance = (ms: number) => {
    now += ms;
    for (const t of timers.splice(0))
      if (t.at <= now) t.f();
      else timers.push(t);
  };
  return { lines, onEvent, advance, flush: () => new Promise((r) => setImmediate(r)) };
}

const SERVER = '127.0.0.1:7001';

test('store-trouble log budget per outage, not per 30 s window: an outage 21 s after a start-up blip gets its error line at once', async () => {
  const h = harness();
  h.onEvent({ type: 'disconnected', cause: 'ECONNRESET', server: SERVER });
  h.advance(300);
  h.onEvent({ type: 'recovered', downMs: 300, failedCalls: 2, lastCause: 'ECONNRESET', server: SERVER });
  h.advance(21_000);
  h.onEvent({ type: 'disconnected', cause: 'connect ECONNREFUSED 127.0.0.1:7001', server: SERVER });
  await h.flush();
  assert.deepEqual(
    h.lines.map((l) => l.level),
    [50, 30, 50],
    'the blip, its end, and the new outage at once',
  );
  assert.equal(h.lines[2]!.server, SERVER);
  h.advance(4_000);
  h.onEvent({
    type: 'recovered',
    downMs: 4_000,
    failedCalls: 280,
    lastCause: 'connect ECONNREFUSED 127.0.0.1:7001',
    server: SERVER,
  });
  h.advance(5_000);
  h.onEvent({ type: 'unanswered', cause: "no answer within 'timeoutMs' 50", server: SERVER });
  await h.flush();
  assert.deepEqual(
    h.lines.map((l) => l.level),
    [50, 30, 50, 30, 50],
    'a CLIENT PAUSE 5 s later: its own line at once too',
  );
});

test("store-trouble recovery line names the server and the whole outage's length", async () => {
  const h = harness();
  h.onEvent({ type: 'connect-timeout', connectTimeoutMs: 2000, server: SERVER });
  h.advance(1000);
  h.onEvent({ type: 'disconnected', cause: 'ECONNREFUSED', server: SERVER });
  h.advance(40_000);
  h.onEvent({ type: 'recovered', downMs: 41_000, failedCalls: 3, lastCause: 'refused', server: SERVER });
  await h.flush();
  assert.deepEqual(
    h.lines.map((l) => l.level),
    [40, 30],
    'one outage (its connect-timeout and disconnect), one recovery',
  );
  assert.equal(h.lines[1]!.server, SERVER);
  assert.equal(h.lines[1]!.downMs, 41_000);
  assert.equal(h.lines[1]!.msg, 'Redis answers the store again');
});

test('store-trouble log backstop: 1,000 outages in 10 s are 10 logged with their recoveries, then one line for the rest and the state left', async () => {
  const h = harness();
  for (let i = 0; i < 1000; i++) {
    h.onEvent({ type: 'disconnected', cause: 'ECONNRESET', server: SERVER });
    h.advance(5);
    h.onEvent({ type: 'recovered', downMs: 5, failedCalls: 1, lastCause: 'x', server: SERVER });
    h.advance(5);
  }
  h.onEvent({ type: 'disconnected', cause: 'ECONNREFUSED', server: SERVER });
  await h.flush();
  assert.equal(h.lines.length, 20);
  h.advance(60_000);
  await h.flush();
  assert.equal(h.lines.length, 21);
  assert.equal(h.lines[20]!.level, 50, 'left down: the last line says so');
  assert.equal(h.lines[20]!.unloggedOutages, 991);
  h.onEvent({ type: 'recovered', downMs: 60_000, failedCalls: 9, lastCause: 'x', server: SERVER });
  await h.flush();
  assert.equal(h.lines[21]!.level, 30, 'and its recovery is logged');
});
