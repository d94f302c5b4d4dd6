// Client addresses: parsing, IPv4-mapped unwrapping, IPv6 subnets, CIDR sets and forwarding chains read from the right.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseIPv4 } from '../core/ip.js';
import {
  CidrSet,
  forwardedHops,
  hopAddress,
  ipKey,
  normalizeIp,
  resolveClient,
  xForwardedForHops,
} from './client-ip.js';

test('IPv4 parses strictly: four decimal octets, no leading zeros', () => {
  assert.equal(parseIPv4('203.0.113.9'), 0xcb007109);
  for (const bad of ['1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.', '', 'a.b.c.d', '1..2.3'])
    assert.equal(parseIPv4(bad), undefined, bad);
});

test('IPv6 normalizes to RFC 5952 text', () => {
  assert.equal(normalizeIp('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
  assert.equal(normalizeIp('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
  assert.equal(normalizeIp('::'), '::');
  assert.equal(normalizeIp('fe80::1%eth0'), 'fe80::1');
  assert.equal(normalizeIp('1:2:3:4:5:6:7:8'), '1:2:3:4:5:6:7:8');
  for (const bad of ['1::2::3', ':::', '12345::', '1:2:3:4:5:6:7:8:9', 'g::1', '1:2:3:4:5:6:7'])
    assert.equal(normalizeIp(bad), undefined, bad);
});

test('IPv4-mapped IPv6 is unwrapped by its bits, whatever the notation (CVE-2026-30827)', () => {
  assert.equal(ipKey('::ffff:1.2.3.4'), '1.2.3.4');
  assert.equal(ipKey('::ffff:102:304'), '1.2.3.4');
  assert.equal(ipKey('0:0:0:0:0:FFFF:0102:0304'), '1.2.3.4');
  // Two different IPv4 clients never share a key.
  assert.notEqual(ipKey('::ffff:10.0.0.1'), ipKey('::ffff:10.0.0.2'));
  // An address that merely ends in a dotted quad is IPv6 and is grouped as such.
  assert.equal(ipKey('2001:db8:1234:5678::1.2.3.4'), '2001:db8:1234:5678::/64');
  assert.equal(ipKey('64:ff9b::1.2.3.4'), '64:ff9b::/64');
});

test('ipKey keeps IPv4 as given and never mistakes an IPv6 text for IPv4', () => {
  // An IPv6 text taken for IPv4 (a dotted tail, a leading digit group) would come back as given; the IPv6
  // path returns its canonical text, which differs for every non-canonical form the generators make.
  fc.assert(
    fc.property(fc.ipV4(), (a) => assert.equal(ipKey(a), a)),
    { numRuns: 2000 },
  );
  const v6 = fc.oneof(
    fc.ipV6(),
    fc.ipV6().map((a) => a.toUpperCase()),
    fc.ipV4().map((a) => `::ffff:${a}`),
    fc.ipV4().map((a) => `1:2::${a}`),
  );
  fc.assert(
    fc.property(v6, (a) => assert.equal(ipKey(a, false), normalizeIp(a))),
    { numRuns: 5000 },
  );
});

test('IPv6 clients are grouped by the subnet (default /64)', () => {
  assert.equal(ipKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(ipKey('2001:db8:1:2:ffff::1'), '2001:db8:1:2::/64');
  assert.equal(ipKey('2001:db8:1:2:3:4:5:6', 56), '2001:db8:1::/56');
  assert.equal(ipKey('2001:db8:1:2ff:3:4:5:6', 56), '2001:db8:1:200::/56');
  assert.equal(ipKey('2001:db8::7', 128), '2001:db8::7');
  assert.equal(ipKey('2001:db8::7', false), '2001:db8::7');
  assert.equal(ipKey('::1'), '::/64');
  assert.equal(ipKey('203.0.113.9', 48), '203.0.113.9');
});

test('CIDR sets match both families, mapped addresses as IPv4, and named ranges', () => {
  const s = new CidrSet(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7', 'loopback'], 'trustProxy');
  assert.ok(s.has('10.200.3.4'));
  assert.ok(s.has('::ffff:10.1.1.1'));
  assert.ok(s.has('2001:db8:ffff::1'));
  assert.ok(s.has('192.0.2.7'));
  assert.ok(!s.has('192.0.2.8'));
  assert.ok(s.has('127.0.0.1'));
  assert.ok(s.has('::1'));
  assert.ok(!s.has('11.0.0.1'));
  assert.ok(!s.has('2001:db9::1'));
  assert.ok(!s.has('not an ip'));
  assert.ok(new CidrSet(['0.0.0.0/0'], 'x').has('8.8.8.8'));
});

test('bad CIDRs are errors that name the field and quote the value', () => {
  assert.throws(() => new CidrSet(['10.0.0.0/33'], 'trustProxy'), {
    code: 'ERR_SLUICE_INVALID_OPTION',
    message: /'trustProxy\[0\]' has a prefix length outside 0-32, got "10.0.0.0\/33"/,
  });
  assert.throws(() => new CidrSet(['10.0.0/8'], 'trustProxy'), {
    message: /'trustProxy\[0\]' is not an IP address, got "10.0.0\/8"/,
  });
  assert.throws(() => new CidrSet([7 as unknown as string], 'allow'), {
    message: /'allow\[0\]' must be an IP address or CIDR range/,
  });
});

test('hops: ports and brackets are stripped; non-addresses are undefined', () => {
  assert.equal(hopAddress('203.0.113.9:4711'), '203.0.113.9');
  assert.equal(hopAddress('[2001:db8::17]:4711'), '2001:db8::17');
  assert.equal(hopAddress('2001:db8::17'), '2001:db8::17');
  assert.equal(hopAddress('unknown'), undefined);
  assert.equal(hopAddress('_hidden'), undefined);
  assert.deepEqual(xForwardedForHops('1.1.1.1, 2.2.2.2 ,3.3.3.3'), ['1.1.1.1', '2.2.2.2', '3.3.3.3']);
});

test('Forwarded (RFC 7239): for= of each element, quoted or not, any parameter order', () => {
  assert.deepEqual(forwardedHops('for=192.0.2.60;proto=http;by=203.0.113.43'), ['192.0.2.60']);
  assert.deepEqual(forwardedHops('for="[2001:db8:cafe::17]:4711", For=198.51.100.17;proto=https'), [
    '[2001:db8:cafe::17]:4711',
    '198.51.100.17',
  ]);
  assert.deepEqual(forwardedHops('proto=https;for=1.2.3.4, by=5.6.7.8'), ['1.2.3.4', '']);
  assert.deepEqual(forwardedHops('for=unknown'), ['unknown']);
});

test('the chain is read from the right, through trusted proxies only', () => {
  const trusted = new CidrSet(['10.0.0.0/8'], 'trustProxy');
  // An untrusted peer: its header is ignored, whatever it says.
  assert.equal(resolveClient('198.51.100.1', ['6.6.6.6'], trusted), '198.51.100.1');
  // A trusted proxy: the hop it reports.
  assert.equal(resolveClient('10.0.0.1', ['203.0.113.9'], trusted), '203.0.113.9');
  // A client prepending a spoofed hop gains nothing: the walk stops at the first untrusted address.
  assert.equal(resolveClient('10.0.0.1', ['6.6.6.6', '203.0.113.9', '10.0.0.2'], trusted), '203.0.113.9');
  // All trusted: the leftmost.
  assert.equal(resolveClient('10.0.0.1', ['10.1.1.1', '10.0.0.2'], trusted), '10.1.1.1');
  // A hop that is not an address ends the walk at the last address.
  assert.equal(resolveClient('10.0.0.1', ['203.0.113.9', 'garbage'], trusted), '10.0.0.1');
  // A mapped peer is matched as IPv4.
  assert.equal(resolveClient('::ffff:10.0.0.1', ['2001:db8::1'], trusted), '2001:db8::1');
});
