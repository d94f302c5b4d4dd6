// The one IP module (http's client keys and the guard both use it): strict parsing, mapped IPv4 unwrapped by
// its bits, masks, canonical text, and CIDR ranges.
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  formatIPv4,
  formatIPv6,
  formatIPv6Groups,
  IpRanges,
  maskIPv4,
  maskIPv6,
  parseCidr,
  parseIp,
  type IpRange,
  type ParsedIp,
} from './ip.js';

const v4 = (text: string): number => {
  const ip = parseIp(text);
  assert.equal(ip?.v, 4, text);
  return (ip as { n: number }).n;
};
const v6 = (text: string): Uint16Array => {
  const ip = parseIp(text);
  assert.equal(ip?.v, 6, text);
  return (ip as { h: Uint16Array }).h;
};
const cidr = (text: string): IpRange =>
  parseCidr(text, (problem) => {
    throw new Error(`${text} ${problem}`);
  });
const ranges = (...texts: string[]): IpRanges => {
  const r = new IpRanges();
  for (const t of texts) r.add(cidr(t));
  return r;
};
const within = (range: string, address: string): boolean => ranges(range).has(parseIp(address)!);

test('IPv4 parses to one number and prints back', () => {
  assert.equal(formatIPv4(v4('203.0.113.7')), '203.0.113.7');
});

test('IPv4-mapped IPv6 is the same host as its IPv4 address', () => {
  assert.deepEqual(parseIp('::ffff:203.0.113.7'), parseIp('203.0.113.7'));
  assert.deepEqual(parseIp('::ffff:cb00:7107'), parseIp('203.0.113.7'));
});

test('IPv6 forms: compressed, full, zoned', () => {
  const full = v6('2001:0db8:0000:0000:0000:0000:0000:0001');
  for (const form of ['2001:db8::1', '2001:db8:0:0::1', '2001:DB8::1']) assert.deepEqual(v6(form), full, form);
  assert.equal(formatIPv6Groups(v6('fe80::1%eth0')), 'fe80:0:0:0:0:0:0:1');
  assert.equal(formatIPv6Groups(v6('::')), '0:0:0:0:0:0:0:0');
});

test('malformed addresses are rejected', () => {
  for (const bad of [
    '',
    '1.2.3',
    '1.2.3.256',
    '01.2.3.4',
    '1.2.3.4.5',
    '1::2::3',
    '12345::',
    'g::1',
    '1:2:3:4:5:6:7:8:9',
    'localhost',
    ' 1.2.3.4',
    '[::1]',
  ]) {
    assert.equal(parseIp(bad), undefined, bad);
  }
});

test('a dotted quad stands only for the last 32 bits: 1.2.3.4::1 is no address (http once read it as 102:304::1)', () => {
  assert.equal(parseIp('1.2.3.4::1'), undefined);
  assert.equal(parseIp('1.2.3.4:1::'), undefined);
  assert.deepEqual(v6('::1.2.3.4'), v6('::102:304'));
  assert.deepEqual(v6('1:2:3:4:5:6:1.2.3.4'), v6('1:2:3:4:5:6:102:304'));
});

test('masking keeps the prefix of the address family', () => {
  assert.equal(formatIPv4(maskIPv4(v4('203.0.113.77'), 24)), '203.0.113.0');
  assert.equal(formatIPv6Groups(maskIPv6(v6('2001:db8:aa:bb:1:2:3:4'), 64)), '2001:db8:aa:bb:0:0:0:0');
  assert.equal(formatIPv6Groups(maskIPv6(v6('2001:db8:aa:bb:1:2:3:4'), 56)), '2001:db8:aa:0:0:0:0:0');
});

test('CIDR membership', () => {
  assert.equal(within('198.51.100.0/22', '198.51.103.255'), true);
  assert.equal(within('198.51.100.0/22', '198.51.104.0'), false);
  assert.equal(within('2001:db8::/32', '2001:db8:ffff::1'), true);
  assert.equal(within('2001:db8::/32', '198.51.100.1'), false);
  assert.equal(within('10.0.0.1', '10.0.0.1'), true);
  assert.throws(() => cidr('10.0.0.0/33'), /has a prefix length outside 0-32/);
  assert.throws(() => cidr('10.0.0/8'), /is not an IP address/);
});

test('IPv4 only matches IPv4 ranges: ::/0 holds no IPv4 client, mapped ranges are IPv4 ranges of 96 fewer bits', () => {
  assert.equal(within('::/0', '10.1.2.3'), false);
  assert.equal(within('::/0', '::ffff:10.1.2.3'), false);
  assert.equal(within('::/0', '2001:db8::1'), true);
  assert.equal(within('::ffff:10.0.0.0/104', '10.1.2.3'), true);
  assert.equal(within('::ffff:10.0.0.0/104', '11.1.2.3'), false);
  assert.throws(() => cidr('::ffff:10.0.0.0/24'), /has a prefix length outside 0-32/);
});

test('property: parseIp accepts exactly what node:net calls an address (zones aside)', () => {
  const hex = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
  const near = fc.oneof(
    fc.ipV4(),
    fc.ipV6(),
    fc.ipV4().map((a) => `::ffff:${a}`),
    fc.array(hex, { minLength: 1, maxLength: 9 }).map((g) => g.join(':')),
    fc
      .tuple(fc.array(hex, { maxLength: 5 }), fc.array(hex, { maxLength: 5 }))
      .map(([a, b]) => `${a.join(':')}::${b.join(':')}`),
    fc.tuple(fc.array(hex, { maxLength: 4 }), fc.ipV4()).map(([a, q]) => `${a.join(':')}::${q}`),
  );
  const text = fc
    .tuple(near, fc.nat(45), fc.constantFrom('', ':', '.', '0', 'f', 'g', '::', '1.2.3.4'), fc.boolean())
    .map(([s, at, c, edit]) => (edit ? s.slice(0, Math.min(at, s.length)) + c + s.slice(Math.min(at, s.length)) : s));
  fc.assert(
    fc.property(text, (s) => {
      assert.equal(parseIp(s) === undefined, isIP(s) === 0, s);
    }),
    { numRuns: 20_000 },
  );
});

test('property: mapped IPv4 is unwrapped in every notation, and two IPv4 clients never parse alike (CVE-2026-30827)', () => {
  const notations = (a: string) => {
    const [w, x, y, z] = a.split('.').map(Number) as [number, number, number, number];
    const hi = ((w << 8) | x).toString(16);
    const lo = ((y << 8) | z).toString(16);
    return [
      `::ffff:${a}`,
      `::FFFF:${a}`,
      `0:0:0:0:0:ffff:${a}`,
      `::ffff:${hi}:${lo}`,
      `0000:0000:0000:0000:0000:FFFF:${hi.padStart(4, '0')}:${lo}`,
    ];
  };
  fc.assert(
    fc.property(fc.ipV4(), fc.ipV4(), (a, b) => {
      for (const form of notations(a)) assert.deepEqual(parseIp(form), parseIp(a), form);
      if (a !== b) assert.notDeepEqual(parseIp(`::ffff:${a}`), parseIp(b));
    }),
  );
});

test('property: every IPv4 address round-trips and lies in its own /n for every n', () => {
  fc.assert(
    fc.property(fc.ipV4(), fc.integer({ min: 0, max: 32 }), (text, n) => {
      const ip = v4(text);
      assert.equal(formatIPv4(ip), text);
      assert.equal(within(`${formatIPv4(maskIPv4(ip, n))}/${n}`, text), true);
    }),
  );
});

test('property: every IPv6 address parses to the groups of its canonical texts', () => {
  fc.assert(
    fc.property(fc.ipV6(), (text) => {
      const ip = parseIp(text)!;
      if (ip.v === 6) {
        assert.deepEqual(v6(formatIPv6Groups(ip.h)), ip.h);
        assert.deepEqual(v6(formatIPv6(ip.h)), ip.h);
      }
    }),
  );
});

/** The first `bits` bits of a 32- or 128-bit number as a bit string: the masks' reference. */
const bitsOf = (ip: ParsedIp): string =>
  ip.v === 4 ? ip.n.toString(2).padStart(32, '0') : Array.from(ip.h, (g) => g.toString(2).padStart(16, '0')).join('');

test('property: a mask keeps exactly the first n bits, and a range holds exactly the addresses that share them', () => {
  const address = fc.oneof(fc.ipV4(), fc.ipV6()).map((t) => parseIp(t)!);
  fc.assert(
    fc.property(address, address, fc.integer({ min: 0, max: 128 }), (a, b, n) => {
      const max = a.v === 4 ? 32 : 128;
      const bits = Math.min(n, max);
      const masked: ParsedIp = a.v === 4 ? { v: 4, n: maskIPv4(a.n, bits) } : { v: 6, h: maskIPv6(a.h, bits) };
      assert.equal(bitsOf(masked), bitsOf(a).slice(0, bits).padEnd(max, '0'));
      const r = new IpRanges();
      r.add(a.v === 4 ? { v: 4, net: maskIPv4(a.n, bits), bits } : { v: 6, net: maskIPv6(a.h, bits), bits });
      assert.equal(r.has(a), true);
      assert.equal(r.has(b), a.v === b.v && bitsOf(a).slice(0, bits) === bitsOf(b).slice(0, bits));
    }),
    { numRuns: 5000 },
  );
});

test('property: a set of ranges holds an address exactly when one of its ranges does', () => {
  const range = fc.tuple(fc.oneof(fc.ipV4(), fc.ipV6()), fc.integer({ min: 0, max: 128 })).map(([t, n]) => {
    const ip = parseIp(t)!;
    return `${t}/${Math.min(n, ip.v === 4 ? 32 : 128)}`;
  });
  fc.assert(
    fc.property(fc.array(range, { maxLength: 12 }), fc.oneof(fc.ipV4(), fc.ipV6()), (list, address) => {
      assert.equal(
        ranges(...list).has(parseIp(address)!),
        list.some((r) => within(r, address)),
      );
    }),
    { numRuns: 2000 },
  );
});
