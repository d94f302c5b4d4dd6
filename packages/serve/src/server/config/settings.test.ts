// `sluice serve` settings: flags over environment over defaults, and errors that name the setting and value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSettings } from './settings.js';

test('--clock is coarse by default, monotonic on request, from the flag or SLUICE_CLOCK; anything else is refused', () => {
  assert.equal(readSettings(['--config', 'x.yaml'], {}).clock, 'coarse');
  assert.equal(readSettings(['--config', 'x.yaml', '--clock', 'monotonic'], {}).clock, 'monotonic');
  assert.equal(readSettings(['--config', 'x.yaml'], { SLUICE_CLOCK: 'monotonic' }).clock, 'monotonic');
  assert.equal(
    readSettings(['--config', 'x.yaml', '--clock=coarse'], { SLUICE_CLOCK: 'monotonic' }).clock,
    'coarse',
    'the flag beats the environment',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--clock', 'wall'], {}),
    /--clock must be coarse or monotonic, got "wall"/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml'], { SLUICE_CLOCK: 'fast' }),
    /SLUICE_CLOCK must be coarse or monotonic, got "fast"/,
  );
});

test('--failure-mode takes open or closed and names the value it refuses', () => {
  assert.equal(readSettings(['--config', 'x.yaml'], {}).failureMode, 'open');
  assert.equal(readSettings(['--config', 'x.yaml', '--failure-mode', 'closed'], {}).failureMode, 'closed');
  assert.throws(
    () => readSettings(['--config', 'x.yaml'], { SLUICE_FAILURE_MODE: 'ajar' }),
    /SLUICE_FAILURE_MODE must be open or closed, got "ajar"/,
  );
});

test('--shadow-mode (global shadow mode) is off by default, on from the flag or SLUICE_SHADOW_MODE, and refuses anything but a boolean', () => {
  assert.equal(readSettings(['--config', 'x.yaml'], {}).shadowMode, false);
  assert.equal(readSettings(['--config', 'x.yaml', '--shadow-mode', 'true'], {}).shadowMode, true);
  assert.equal(readSettings(['--config', 'x.yaml'], { SLUICE_SHADOW_MODE: '1' }).shadowMode, true);
  assert.equal(
    readSettings(['--config', 'x.yaml', '--shadow-mode=false'], { SLUICE_SHADOW_MODE: 'true' }).shadowMode,
    false,
    'the flag beats the environment',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml'], { SLUICE_SHADOW_MODE: 'yes' }),
    /SLUICE_SHADOW_MODE must be true or false, got "yes"/,
  );
});

test('--near-limit-ratio is 0.8 by default and takes a number above 0 and at most 1', () => {
  assert.equal(readSettings(['--config', 'x.yaml'], {}).nearLimitRatio, 0.8);
  assert.equal(readSettings(['--config', 'x.yaml', '--near-limit-ratio', '0.5'], {}).nearLimitRatio, 0.5);
  assert.equal(readSettings(['--config', 'x.yaml'], { SLUICE_NEAR_LIMIT_RATIO: '1' }).nearLimitRatio, 1);
  for (const bad of ['0', '1.5', '-0.2', 'eighty', '']) {
    assert.throws(
      () => readSettings(['--config', 'x.yaml', `--near-limit-ratio=${bad}`], {}),
      new RegExp(
        `--near-limit-ratio must be a number above 0 and at most 1, such as 0.8, got ${JSON.stringify(bad).replace('.', '\\.')}`,
      ),
    );
  }
});

test('the gRPC maximum connection age is 24 h with 1 h of grace by default, as in Envoy ratelimit; 0 turns it off; a timer cannot take more than 2^31 - 1 ms', () => {
  const d = readSettings(['--config', 'x.yaml'], {});
  assert.deepEqual([d.grpcMaxConnectionAgeMs, d.grpcMaxConnectionAgeGraceMs], [86_400_000, 3_600_000]);
  assert.equal(readSettings(['--config', 'x.yaml', '--grpc-max-connection-age-ms', '0'], {}).grpcMaxConnectionAgeMs, 0);
  assert.equal(
    readSettings(['--config', 'x.yaml'], { SLUICE_GRPC_MAX_CONNECTION_AGE_GRACE_MS: '5000' })
      .grpcMaxConnectionAgeGraceMs,
    5000,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-max-connection-age-ms', '3000000000'], {}),
    /--grpc-max-connection-age-ms must be at most 2147483647 \(24\.8 days\), got "3000000000"/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-max-connection-age-ms', '-5'], {}),
    /--grpc-max-connection-age-ms must be a whole number of at least 0, got "-5"/,
  );
});

test('gRPC TLS: the certificate and key go together, and a client CA needs both', () => {
  const tls = readSettings(
    ['--config', 'x.yaml', '--grpc-tls-cert', 's.pem', '--grpc-tls-key', 's.key', '--grpc-tls-client-ca', 'ca.pem'],
    {},
  );
  assert.deepEqual([tls.grpcTlsCert, tls.grpcTlsKey, tls.grpcTlsClientCa], ['s.pem', 's.key', 'ca.pem']);
  assert.equal(
    readSettings(['--config', 'x.yaml'], { SLUICE_GRPC_TLS_CERT: 's.pem', SLUICE_GRPC_TLS_KEY: 's.key' }).grpcTlsKey,
    's.key',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-tls-cert', 's.pem'], {}),
    /--grpc-tls-cert and --grpc-tls-key go together; only --grpc-tls-cert was given/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml'], { SLUICE_GRPC_TLS_KEY: 's.key' }),
    /only --grpc-tls-key was given/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-tls-client-ca', 'ca.pem'], {}),
    /--grpc-tls-client-ca needs --grpc-tls-cert and --grpc-tls-key/,
  );
});

test('--redis-per-second takes a redis:// or rediss:// URL, and only beside a main Redis', () => {
  assert.equal(
    readSettings(['--config', 'x.yaml', '--redis', 'redis://a:6379', '--redis-per-second', 'rediss://:pw@b:6380'], {})
      .redisPerSecond,
    'rediss://:pw@b:6380',
  );
  assert.equal(
    readSettings(['--config', 'x.yaml', '--redis-cluster', 'a:7000'], { SLUICE_REDIS_PER_SECOND: 'redis://b:6380' })
      .redisPerSecond,
    'redis://b:6380',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis', 'redis://a:6379', '--redis-per-second', 'b:6380'], {}),
    /--redis-per-second must be a redis:\/\/ or rediss:\/\/ URL, got "b:6380"/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis-per-second', 'redis://b:6380'], {}),
    /--redis-per-second needs a main Redis \(--redis, --redis-cluster or --redis-sentinel\)/,
  );
});

test('--redis-sentinel takes <master name>@host:port,...; one Redis backend at a time; TLS settings go with it', () => {
  assert.equal(
    readSettings(['--config', 'x.yaml', '--redis-sentinel', 'mymaster@10.0.0.1:26379,10.0.0.2:26379'], {})
      .redisSentinel,
    'mymaster@10.0.0.1:26379,10.0.0.2:26379',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis-sentinel', '10.0.0.1:26379'], {}),
    /--redis-sentinel must be <master name>@host:port\[,host:port\.\.\.\], e\.g\. .*got "10\.0\.0\.1:26379"/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--redis', 'redis://x', '--redis-sentinel', 'm@h:1'], {}),
    /give one of --redis, --redis-cluster or --redis-sentinel, not --redis and --redis-sentinel/,
  );
  const tls = readSettings(['--config', 'x.yaml', '--redis-sentinel', 'm@h:1', '--redis-tls', 'true'], {});
  assert.deepEqual([tls.redisSentinel, tls.redisTls], ['m@h:1', true]);
});

test("the admin port is 6070 on loopback by default (Envoy ratelimit's debug port), apart from the decision ports, and needs a token off loopback when NODE_ENV=production", () => {
  const d = readSettings(['--config', 'x.yaml'], {});
  assert.deepEqual(
    [d.adminPort, d.adminHost, d.adminToken, d.adminMaxEventStreams, d.adminEventStreamMs],
    [6070, '127.0.0.1', undefined, 64, 300_000],
  );
  assert.equal(readSettings(['--config', 'x.yaml'], { SLUICE_ADMIN_PORT: '-1' }).adminPort, -1);
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--admin-port', '8080'], {}),
    /--admin-port \(8080\) must differ from --port and --grpc-port/,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--admin-host', '0.0.0.0'], { NODE_ENV: 'production' }),
    /--admin-host 0\.0\.0\.0 opens the dashboard, \/config and \/metrics beyond this host with no --admin-token .*NODE_ENV=production has no default secret/,
  );
  assert.equal(
    readSettings(['--config', 'x.yaml', '--admin-host', '0.0.0.0'], {
      NODE_ENV: 'production',
      SLUICE_ADMIN_TOKEN: 'x'.repeat(16),
    }).adminToken,
    'x'.repeat(16),
  );
  assert.equal(
    readSettings(['--config', 'x.yaml', '--admin-host', '0.0.0.0'], {}).adminHost,
    '0.0.0.0',
    'outside production: a warning in the log, not a refusal',
  );
  assert.equal(
    readSettings(['--config', 'x.yaml', '--admin-host', '0.0.0.0', '--admin-port', '-1'], { NODE_ENV: 'production' })
      .adminPort,
    -1,
    'no admin port, nothing to protect',
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--admin-token', 'short'], {}),
    /--admin-token must be at least 16 characters without spaces, got "short"/,
  );
});

test('--grpc-max-pending-calls is 4096 by default and at least 1', () => {
  assert.equal(readSettings(['--config', 'x.yaml'], {}).grpcMaxPendingCalls, 4096);
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-max-pending-calls', '0'], {}),
    /--grpc-max-pending-calls must be a whole number of at least 1, got "0"/,
  );
});

test('--grpc-max-pending-bytes is 64 MiB and --grpc-max-pending-bytes-per-address 16 MiB by default, each at least 1', () => {
  const s = readSettings(['--config', 'x.yaml'], {});
  assert.deepEqual([s.grpcMaxPendingBytes, s.grpcMaxPendingBytesPerAddress], [64 * 1024 * 1024, 16 * 1024 * 1024]);
  assert.equal(
    readSettings(['--config', 'x.yaml'], { SLUICE_GRPC_MAX_PENDING_BYTES_PER_ADDRESS: '1048576' })
      .grpcMaxPendingBytesPerAddress,
    1_048_576,
  );
  assert.throws(
    () => readSettings(['--config', 'x.yaml', '--grpc-max-pending-bytes-per-address', '0'], {}),
    /--grpc-max-pending-bytes-per-address must be a whole number of at least 1, got "0"/,
  );
});
