// The service's store-trouble log: a flapping Redis is a few lines, and the last line says how it was left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { storeEventLog } from './store-log.js';

function harness() {
  const lines: { level: number; msg: string; unloggedTransitions?: number }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  let now = 0;
  const timers: { at: number; f: () => void }[] = [];
  const onEvent = storeEventLog(pino({ level: 'info' }, stream), { store: 'redis' }, { everyMs: 30_000, now: () => now, setTimer: (f, ms) => timers.push({ at: now + ms, f }) });
  const advance = (ms: number) => {
    now += ms;
    for (const t of timers.splice(0)) if (t.at <= now) t.f();
      else timers.push(t);
  };
  return { lines, onEvent, advance, flush: () => new Promise((r) => setImmediate(r)) };
}

test('store trouble log is rate-limited: 1,000 outages and recoveries in 10 s are 2 lines, then one line for the state left', async () => {
  const h = harness();
  for (let i = 0; i < 1000; i++) {
    h.onEvent({ type: 'disconnected', cause: 'ECONNRESET' });
    h.advance(5);
    h.onEvent({ type: 'recovered', downMs: 5, failedCalls: 1, lastCause: 'x' });
    h.advance(5);
  }
  h.onEvent({ type: 'disconnected', cause: 'ECONNREFUSED' });
  await h.flush();
  assert.deepEqual(h.lines.map((l) => l.level), [50, 30], 'the first outage and its recovery');
  h.advance(30_000);
  await h.flush();
  assert.equal(h.lines.length, 3);
  assert.equal(h.lines[2]!.level, 50, 'left down: the last line says so');
  assert.equal(h.lines[2]!.unloggedTransitions, 1999);
});

test('store trouble log: an outage and its recovery are each logged at once when the window allows', async () => {
  const h = harness();
  h.onEvent({ type: 'connect-timeout', connectTimeoutMs: 2000 });
  h.advance(40_000);
  h.onEvent({ type: 'recovered', downMs: 40_000, failedCalls: 3, lastCause: 'refused' });
  h.advance(40_000);
  h.onEvent({ type: 'unanswered', cause: "no answer within 'timeoutMs' 50" });
  await h.flush();
  assert.deepEqual(h.lines.map((l) => l.level), [40, 30, 50]);
});
