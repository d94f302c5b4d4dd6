import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { cidrContains, ipText, maskedText, maskIp, parseCidr, parseIp, tryParseIp } from './ip.js';

test('IPv4 parses to the mapped form and prints back', () => {
  const ip = parseIp('203.0.113.7', 'ip');
  assert.equal(ip.v4, true);
  assert.equal(ipText(ip.bytes), '203.0.113.7');
});

test('IPv4-mapped IPv6 is the same host as its IPv4 address', () => {
  const mapped = parseIp('::ffff:203.0.113.7', 'ip');
  assert.equal(mapped.v4, true);
  assert.deepEqual(mapped.bytes, parseIp('203.0.113.7', 'ip').bytes);
  assert.deepEqual(parseIp('::ffff:cb00:7107', 'ip').bytes, mapped.bytes);
});

test('IPv6 forms: compressed, full, bracketed, zoned', () => {
  const full = parseIp('2001:0db8:0000:0000:0000:0000:0000:0001', 'ip');
  for (const form of ['2001:db8::1', '[2001:db8::1]', '2001:db8:0:0::1', '2001:DB8::1']) {
    assert.deepEqual(parseIp(form, 'ip').bytes, full.bytes, form);
  }
  assert.equal(ipText(parseIp('fe80::1%eth0', 'ip').bytes), 'fe80:0:0:0:0:0:0:1');
  assert.equal(ipText(parseIp('::', 'ip').bytes), '0:0:0:0:0:0:0:0');
});

test('malformed addresses are rejected, naming the field and quoting the value', () => {
  for (const bad of ['', '1.2.3', '1.2.3.256', '01.2.3.4', '1.2.3.4.5', '1::2::3', '12345::', 'g::1', '1:2:3:4:5:6:7:8:9', 'localhost', ' 1.2.3.4']) {
    assert.equal(tryParseIp(bad), undefined, bad);
  }
  assert.throws(() => parseIp('1.2.3.999', "guard.check(): 'ip'"), {
    code: 'ERR_SLUICE_INVALID_IP',
    message: `[sluice] guard.check(): 'ip' must be an IPv4 or IPv6 address, got "1.2.3.999"`,
  });
});

test('masking keeps the prefix of the address family', () => {
  assert.equal(ipText(maskIp(parseIp('203.0.113.77', 'ip'), 24)), '203.0.113.0');
  assert.equal(ipText(maskIp(parseIp('2001:db8:aa:bb:1:2:3:4', 'ip'), 64)), '2001:db8:aa:bb:0:0:0:0');
  assert.equal(ipText(maskIp(parseIp('2001:db8:aa:bb:1:2:3:4', 'ip'), 56)), '2001:db8:aa:0:0:0:0:0');
});

test('CIDR membership', () => {
  const v4 = parseCidr('198.51.100.0/22', 'r');
  assert.equal(cidrContains(v4, parseIp('198.51.103.255', 'ip')), true);
  assert.equal(cidrContains(v4, parseIp('198.51.104.0', 'ip')), false);
  const v6 = parseCidr('2001:db8::/32', 'r');
  assert.equal(cidrContains(v6, parseIp('2001:db8:ffff::1', 'ip')), true);
  assert.equal(cidrContains(v6, parseIp('198.51.100.1', 'ip')), false);
  assert.equal(cidrContains(parseCidr('10.0.0.1', 'r'), parseIp('10.0.0.1', 'ip')), true);
  assert.throws(() => parseCidr('10.0.0.0/33', "Guard 'denyList[0]'"), { code: 'ERR_SLUICE_INVALID_IP', message: /denyList\[0\].*"10\.0\.0\.0\/33"/ });
});

test('property: every IPv4 address round-trips and lies in its own /n for every n', () => {
  fc.assert(
    fc.property(fc.ipV4(), fc.integer({ min: 0, max: 32 }), (text, n) => {
      const ip = parseIp(text, 'ip');
      assert.equal(ipText(ip.bytes), text);
      assert.equal(cidrContains(parseCidr(`${ipText(maskIp(ip, n))}/${n}`, 'r'), ip), true);
    }),
  );
});

test('property: every IPv6 address parses to the bytes of its canonical text', () => {
  fc.assert(
    fc.property(fc.ipV6(), (text) => {
      const ip = parseIp(text, 'ip');
      if (!ip.v4) assert.deepEqual(parseIp(ipText(ip.bytes), 'ip').bytes, ip.bytes);
    }),
  );
});

test('maskedText is ipText(maskIp(...)) for every prefix of either family', () => {
  for (const text of ['203.0.113.77', '255.255.255.255', '0.0.0.0', '10.200.3.129', '2001:db8:aa:bb:1:2:3:4', '::ffff:1.2.3.4']) {
    const ip = parseIp(text, 'ip');
    for (let n = 0; n <= (ip.v4 ? 32 : 128); n++) assert.equal(maskedText(ip, n), ipText(maskIp(ip, n)), `${text}/${n}`);
  }
});
