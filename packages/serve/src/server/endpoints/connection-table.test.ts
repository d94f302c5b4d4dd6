// The listener's connection table alone: at a cap the longest-idle connection makes room, a busy one never
// does, and an address's share is made room for among its own connections (IPv6 by /64).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ConnectionTable } from './connection-table.js';

function table(maxConnections: number, maxConnectionsPerAddress: number) {
  const closed: string[] = [];
  const t = new ConnectionTable<string>({ maxConnections, maxConnectionsPerAddress }, (c) => closed.push(c));
  return { t, closed };
}

test('at the cap the longest-idle connection is closed to admit a newcomer (one that served a request before one that has not); a busy one never is', () => {
  const { t, closed } = table(3, 10);
  for (const c of ['a', 'b', 'c']) assert.ok(t.admit(c, '10.0.0.1'));
  t.busy('a'); // a has a request in flight: b is now the longest idle
  assert.ok(t.admit('d', '10.0.0.2'));
  assert.deepEqual(closed, ['b']);
  t.busy('c');
  t.done('a'); // a is idle again, having served a request: it goes before d, which has sent none yet
  assert.ok(t.admit('e', '10.0.0.3'));
  assert.deepEqual(closed, ['b', 'a']);
  t.busy('e');
  t.busy('d');
  assert.equal(t.admit('f', '10.0.0.4'), false, 'every connection busy: the newcomer is refused');
  assert.deepEqual(closed, ['b', 'a']);
  assert.equal(t.size, 3);
  assert.equal(t.refused, 1);
  assert.equal(t.evicted, 2);
});

test("at an address's share, that address's own longest-idle connection makes room, not another's", () => {
  const { t, closed } = table(100, 2);
  assert.ok(t.admit('other', '10.0.0.9'));
  assert.ok(t.admit('x1', '10.0.0.1'));
  assert.ok(t.admit('x2', '::ffff:10.0.0.1'), 'an IPv4-mapped address is the same client');
  assert.ok(t.admit('x3', '10.0.0.1'));
  assert.deepEqual(closed, ['x1']);
  t.busy('x2');
  t.busy('x3');
  assert.equal(t.admit('x4', '10.0.0.1'), false);
  assert.equal(t.countFrom('10.0.0.1'), 2);
  assert.equal(t.countFrom('10.0.0.9'), 1);
});

test('IPv6 clients share by /64', () => {
  const { t, closed } = table(100, 1);
  assert.ok(t.admit('a', '2001:db8:1:2::1'));
  assert.ok(t.admit('b', '2001:db8:1:2:ffff::9'));
  assert.deepEqual(closed, ['a'], 'the same /64');
  assert.ok(t.admit('c', '2001:db8:1:3::1'));
  assert.deepEqual(closed, ['a'], 'another /64');
});

test('a seat kept after its connection closed changes nothing: a request ending on it does not make a closed connection the one to close', () => {
  const { t, closed } = table(1, 1);
  const seat = t.admitSeat('a', '10.0.0.1');
  assert.ok(seat);
  t.busySeat(seat);
  t.remove('a'); // its socket closed while a request was in flight
  t.doneSeat(seat); // then the response detached
  assert.ok(t.admit('b', '10.0.0.2'));
  assert.ok(t.admit('c', '10.0.0.3'));
  assert.deepEqual(closed, ['b'], "b made room; a, gone, was not closed again in b's place");
  assert.equal(t.size, 1);
});

test('a busy count that goes above one stays busy until every request ended; remove forgets a connection', () => {
  const { t, closed } = table(2, 2);
  t.admit('a', '10.0.0.1');
  t.admit('b', '10.0.0.1');
  t.busy('a');
  t.busy('a');
  t.done('a');
  t.busy('b');
  assert.equal(t.admit('c', '10.0.0.2'), false, 'a still has one request in flight');
  t.remove('b');
  assert.ok(t.admit('c', '10.0.0.2'));
  assert.deepEqual(closed, []);
  t.done('b'); // a late end on a removed connection changes nothing
  assert.equal(t.size, 2);
});

test('property: never more than the caps open, never a busy connection closed, a newcomer refused only when all it could replace are busy', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('admit' as const), from: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ kind: fc.constantFrom('busy' as const, 'done' as const, 'remove' as const), pick: fc.nat() }),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 1, max: 6 }),
      fc.array(op, { maxLength: 80 }),
      (max, perAddress, ops) => {
        const busy = new Map<number, number>();
        const open = new Map<number, number>(); // connection -> address
        const t = new ConnectionTable<number>({ maxConnections: max, maxConnectionsPerAddress: perAddress }, (c) => {
          assert.equal(busy.get(c) ?? 0, 0, `closed ${c} with a request in flight`);
          open.delete(c);
        });
        let next = 0;
        for (const o of ops) {
          if (o.kind === 'admit') {
            const c = next++;
            const mine = [...open.values()].filter((a) => a === o.from).length;
            const couldReplace =
              mine >= perAddress
                ? [...open].filter(([k, a]) => a === o.from && (busy.get(k) ?? 0) === 0)
                : open.size >= max
                  ? [...open].filter(([k]) => (busy.get(k) ?? 0) === 0)
                  : [undefined];
            const ok = t.admit(c, `10.0.0.${o.from}`);
            assert.equal(ok, couldReplace.length > 0);
            if (ok) open.set(c, o.from);
          } else {
            const keys = [...open.keys()];
            if (keys.length === 0) continue;
            const c = keys[o.pick % keys.length]!;
            if (o.kind === 'busy') t.busy(c), busy.set(c, (busy.get(c) ?? 0) + 1);
            else if (o.kind === 'done' && (busy.get(c) ?? 0) > 0) t.done(c), busy.set(c, busy.get(c)! - 1);
            else if (o.kind === 'remove') t.remove(c), open.delete(c), busy.delete(c);
          }
          assert.equal(t.size, open.size);
          assert.ok(open.size <= max);
          for (let a = 0; a < 4; a++) assert.ok(t.countFrom(`10.0.0.${a}`) <= perAddress);
        }
      },
    ),
  );
});
