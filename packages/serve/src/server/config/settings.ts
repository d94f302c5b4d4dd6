/**
 * Every setting of `sluice serve` in one place: its flag, its environment variable, its default. A flag
 * beats the environment, which beats the default (as envoyproxy/ratelimit's settings.go lists its env).
 */
import { readFileSync } from 'node:fs';

export interface Settings {
  /** YAML file or folder of YAML files. */
  config: string;
  /** Envoy ratelimit's MERGE_DOMAIN_CONFIG: files naming one domain add up instead of clashing. */
  mergeDomainConfig: boolean;
  host: string;
  /** HTTP: /json, /v1/check, /nginx/<domain>, /healthz, /readyz, /metrics, dashboard. 0 picks a free port. */
  port: number;
  /** gRPC RateLimitService. 0 picks a free port; -1 disables gRPC. */
  grpcPort: number;
  /** Admin listener (dashboard, /events, /config, /metrics), as Envoy ratelimit's DEBUG_PORT. 0 picks a free port; -1 disables it. */
  adminPort: number;
  /** Address of the admin listener; loopback unless an operator opens it (then with --admin-token). */
  adminHost: string;
  /** Bearer (or Basic password) token every admin request must carry; none by default, required off loopback when NODE_ENV=production. */
  adminToken: string | undefined;
  /**
   * Host names the admin port answers besides IP addresses and `localhost` (lower-case, no port): any other
   * `Host` is 421, token or not, so a page in an operator's browser cannot read it by DNS rebinding.
   */
  adminHosts: readonly string[];
  /** Open /events streams the admin listener holds at most; one more is answered 503. */
  adminMaxEventStreams: number;
  /** An /events stream is ended after this (the dashboard's EventSource reconnects); a stream whose client stops reading ends sooner. */
  adminEventStreamMs: number;
  /** Calls the gRPC server holds while their message has not arrived whole, across connections; one more is RESOURCE_EXHAUSTED. */
  grpcMaxPendingCalls: number;
  /** A gRPC connection this old (±10 %) is sent GOAWAY, so clients reconnect and re-resolve; 0 never. */
  grpcMaxConnectionAgeMs: number;
  /** After that GOAWAY, how long its calls in flight may go on before the connection is cut. */
  grpcMaxConnectionAgeGraceMs: number;
  /** A gRPC connection with no call in flight for this long is sent GOAWAY (gRPC's MAX_CONNECTION_IDLE); 0 never. */
  grpcMaxConnectionIdleMs: number;
  /** Calls one gRPC connection may have in flight at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  grpcMaxConcurrentStreams: number;
  /** How often an idle gRPC connection is pinged to find a peer that is gone (gRPC's KEEPALIVE_TIME); 0 never. */
  grpcKeepaliveTimeMs: number;
  /** How long a ping's answer may take before the connection is closed (gRPC's KEEPALIVE_TIMEOUT). */
  grpcKeepaliveTimeoutMs: number;
  /** A connection (HTTP or gRPC) must have sent a request's headers within this, or it is closed. */
  headersTimeoutMs: number;
  /** An HTTP request must have arrived whole (headers and body) within this, or it is answered 408 and closed. */
  requestTimeoutMs: number;
  /** An idle HTTP keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections each listener (HTTP, gRPC, admin) holds at most; at the cap the longest-idle one is closed to admit a new one. */
  maxConnections: number;
  /** Open connections one client address (IPv6: one /64) holds on each listener at most; at it, that address's longest-idle one makes room. */
  maxConnectionsPerAddress: number;
  /** gRPC calls one connection holds while their message has not arrived whole; one more on it is RESOURCE_EXHAUSTED. */
  grpcMaxPendingCallsPerConnection: number;
  /** gRPC calls one client address (IPv6: one /64) holds while their message has not arrived whole. */
  grpcMaxPendingCallsPerAddress: number;
  /** Bytes those gRPC calls hold together, across connections; past it, the address holding the most gives some up. */
  grpcMaxPendingBytes: number;
  /** Bytes those gRPC calls hold from one client address (IPv6: one /64); past it, its fullest connection gives some up. */
  grpcMaxPendingBytesPerAddress: number;
  /** On SIGTERM, how long /readyz and gRPC health say not-serving while decisions go on, before the listeners close. */
  drainMs: number;
  /** PEM certificate chain and private key files: gRPC over TLS (HTTP/2 negotiated by ALPN). */
  grpcTlsCert: string | undefined;
  grpcTlsKey: string | undefined;
  /** PEM CA file: clients must present a certificate it signed (mutual TLS). */
  grpcTlsClientCa: string | undefined;
  /** redis://host:port/db; unset means the in-memory store. */
  redis: string | undefined;
  /** host:port,host:port of a Redis Cluster's seed nodes. */
  redisCluster: string | undefined;
  /** <master name>@host:port,host:port of Redis Sentinels: the primary they name, followed across failovers. */
  redisSentinel: string | undefined;
  /**
   * Envoy ratelimit's REDIS_PERSECOND: a Redis URL of its own for the rules whose windows are all at most a
   * second (unit: second), whose many short-lived keys then stay off the main Redis.
   */
  redisPerSecond: string | undefined;
  redisPrefix: string;
  /** Redis ACL user and password (AUTH), for --redis and --redis-cluster alike; a URL's own win for --redis. */
  redisUsername: string | undefined;
  redisPassword: string | undefined;
  /** TLS to Redis with the system's CAs (a rediss:// URL asks for it too). */
  redisTls: boolean;
  /** PEM CA that signed Redis's certificate (a private CA); implies TLS. */
  redisTlsCa: string | undefined;
  redisTimeoutMs: number;
  /** How long start-up waits for the first Redis connection before serving anyway. */
  redisConnectTimeoutMs: number;
  /** This service's region, with regionPeers: one limit per descriptor across regions (docs/distributed.md, "Regions"). */
  region: string | undefined;
  /** The other regions' Redis servers: name=redis://host:port,name=redis://host:port. */
  regionPeers: string | undefined;
  /** How often each service pushes its region's counts to the other regions. */
  regionExchangeMs: number;
  /** What a Redis outage answers: 'open' admits, 'closed' rejects (and /readyz reports not ready). */
  failureMode: 'open' | 'closed';
  /** Memory store bound across all rules. */
  maxKeys: number;
  /** A new key when the memory store is at --max-keys and every key it could evict is denying. */
  memoryOnFull: 'allow' | 'deny';
  /**
   * The memory store's clock: 'coarse' reads the monotonic clock at most once per 1 ms tick or 64
   * decisions (the library's default), 'monotonic' on every decision. A Redis store uses Redis's time.
   */
  clock: 'coarse' | 'monotonic';
  /** Largest request body accepted, in bytes. */
  maxBodyBytes: number;
  /** Most bytes of config YAML (all files), at start and on reload: a bigger config is refused before it is read. */
  maxConfigBytes: number;
  /** Most rate_limit blocks in the config (all domains), at start and on reload. */
  maxRules: number;
  logLevel: string;
  /** Watch the config file(s) and reload on change (SIGHUP always reloads). */
  watch: boolean;
  /** Per `detailed_metric` rule, the most descriptor values with a metric series of their own. */
  maxDetailedSeries: number;
  /** Where the login demo (`npm run demo`) runs; the dashboard links to it when set. */
  demoUrl: string | undefined;
  /** Global shadow mode (Envoy ratelimit's SHADOW_MODE): answer OK whatever the rules decide, and count it. */
  shadowMode: boolean;
  /** Answer a request for a domain no config names with an error (400, INVALID_ARGUMENT) instead of Envoy's OK. */
  strictDomains: boolean;
  /** Envoy ratelimit's NEAR_LIMIT_RATIO: a hit within the limit counts as near once this share of it is used. */
  nearLimitRatio: number;
  /**
   * Envoy ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a hit over its limit is not counted (sluice's
   * library semantics). Default false: fixed-window rules count it, as Envoy does (token quotas need it).
   */
  stopCacheKeyIncrementWhenOverlimit: boolean;
  /** 'envoy': answers as envoyproxy/ratelimit's (whole-second durations, headers only if asked); 'sluice': today's richer ones. */
  answers: 'envoy' | 'sluice';
  /** Envoy ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED: add the three RateLimit headers to the answers (answers 'envoy'). */
  limitResponseHeadersEnabled: boolean;
  /** Envoy ratelimit's LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER: those headers' names. */
  limitLimitHeader: string;
  limitRemainingHeader: string;
  limitResetHeader: string;
}

interface Spec {
  readonly flag: string;
  readonly env: string;
  /** The name envoyproxy/ratelimit reads the same setting from, read when `env` is unset. */
  readonly envoyEnv?: string;
  readonly help: string;
  readonly parse: (raw: string, where: string) => unknown;
}

const int = (min: number) => (raw: string, where: string) => {
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min)
    throw new SettingsError(`${where} must be a whole number of at least ${min}, got ${JSON.stringify(raw)}`);
  return n;
};
/** A timer's delay: Node's timers take at most 2^31 - 1 ms (24.8 days) and fire at once beyond it. */
const delayMs = (raw: string, where: string) => {
  const n = int(0)(raw, where);
  if (n > 2_147_483_647)
    throw new SettingsError(`${where} must be at most 2147483647 (24.8 days), got ${JSON.stringify(raw)}`);
  return n;
};
const str = (raw: string, where: string) => {
  if (raw === '') throw new SettingsError(`${where} must not be empty`);
  return raw;
};
/** A fraction above 0 and at most 1, such as 0.8. */
const ratio = (raw: string, where: string) => {
  const n = Number(raw);
  if (!/^(0|1)?(\.\d+)?$/.test(raw) || raw === '' || raw === '.' || !(n > 0 && n <= 1))
    throw new SettingsError(`${where} must be a number above 0 and at most 1, such as 0.8, got ${JSON.stringify(raw)}`);
  return n;
};
/** One of a few words, e.g. 'open' or 'closed'. */
const oneOf =
  (...words: string[]) =>
  (raw: string, where: string) => {
    if (!words.includes(raw))
      throw new SettingsError(`${where} must be ${words.join(' or ')}, got ${JSON.stringify(raw)}`);
    return raw;
  };
/** An HTTP header name (RFC 9110's token), such as X-RateLimit-Limit. */
const HEADER_NAME = (raw: string, where: string) =>
  matching(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, 'an HTTP header name such as X-RateLimit-Limit')(raw, where);
/** A text value that must match `pattern`; the error says what it must be (`shape`). */
const matching = (pattern: RegExp, shape: string) => (raw: string, where: string) => {
  if (!pattern.test(raw)) throw new SettingsError(`${where} must be ${shape}, got ${JSON.stringify(raw)}`);
  return raw;
};
/** A comma-separated list of DNS names (`sluice.internal,metrics.example.com`), lower-cased. */
const hostNames = (raw: string, where: string): readonly string[] => {
  const names = raw.split(',').map((n) => n.trim().toLowerCase());
  for (const n of names) {
    if (!/^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/.test(n)) {
      throw new SettingsError(
        `${where} must be host names separated by commas, such as sluice.internal,metrics.example.com (no port, no scheme), got ${JSON.stringify(raw)}: ${JSON.stringify(n)} is not a host name`,
      );
    }
  }
  return names.map((n) => n.replace(/\.$/, ''));
};
const bool = (raw: string, where: string) => {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(`${where} must be true or false, got ${JSON.stringify(raw)}`);
};

export const SETTINGS: Readonly<Record<keyof Settings, Spec>> = {
  config: {
    flag: '--config',
    env: 'SLUICE_CONFIG',
    help: 'YAML config file or folder (Envoy ratelimit format)',
    parse: str,
  },
  mergeDomainConfig: {
    flag: '--merge-domain-config',
    env: 'SLUICE_MERGE_DOMAIN_CONFIG',
    help: "files naming the same domain add up to one (a descriptor defined twice is still an error), as Envoy ratelimit's MERGE_DOMAIN_CONFIG (default false)",
    parse: bool,
  },
  host: {
    flag: '--host',
    env: 'SLUICE_HOST',
    help: 'address to listen on (default 127.0.0.1; 0.0.0.0 for all)',
    parse: str,
  },
  port: { flag: '--port', env: 'SLUICE_PORT', help: 'HTTP port (default 8080)', parse: int(0) },
  grpcPort: {
    flag: '--grpc-port',
    env: 'SLUICE_GRPC_PORT',
    help: 'gRPC port (default 8081; -1 disables gRPC)',
    parse: int(-1),
  },
  adminPort: {
    flag: '--admin-port',
    env: 'SLUICE_ADMIN_PORT',
    help: "admin port: dashboard, /events, /config and /metrics, apart from the decisions as Envoy ratelimit's DEBUG_PORT (default 6070; -1 disables it)",
    parse: int(-1),
  },
  adminHost: {
    flag: '--admin-host',
    env: 'SLUICE_ADMIN_HOST',
    help: 'address of the admin port (default 127.0.0.1; another needs --admin-token when NODE_ENV=production)',
    parse: str,
  },
  adminToken: {
    flag: '--admin-token',
    env: 'SLUICE_ADMIN_TOKEN',
    help: 'token every admin request must carry (Authorization: Bearer <token>, or Basic with it as the password); prefer the environment variable (default none)',
    parse: matching(/^\S{16,}$/, 'at least 16 characters without spaces'),
  },
  adminHosts: {
    flag: '--admin-hosts',
    env: 'SLUICE_ADMIN_HOSTS',
    help: 'host names the admin port answers, comma-separated, besides IP addresses and localhost: a request with any other Host is 421 (DNS rebinding), token or not (default none)',
    parse: hostNames,
  },
  adminMaxEventStreams: {
    flag: '--admin-max-event-streams',
    env: 'SLUICE_ADMIN_MAX_EVENT_STREAMS',
    help: 'open dashboard /events streams held at most; one more is answered 503 (default 64)',
    parse: int(1),
  },
  adminEventStreamMs: {
    flag: '--admin-event-stream-ms',
    env: 'SLUICE_ADMIN_EVENT_STREAM_MS',
    help: 'an /events stream is ended after this, and at once when its client stops reading; the dashboard reconnects by itself (default 300000, 5 min)',
    parse: (raw: string, where: string) => Math.max(1, delayMs(raw, where)),
  },
  grpcMaxPendingCalls: {
    flag: '--grpc-max-pending-calls',
    env: 'SLUICE_GRPC_MAX_PENDING_CALLS',
    help: 'gRPC calls held at once, across connections, while their message has not arrived whole (each must within --request-timeout-ms); one more is RESOURCE_EXHAUSTED (default 4096)',
    parse: int(1),
  },
  grpcMaxConnectionAgeMs: {
    flag: '--grpc-max-connection-age-ms',
    env: 'SLUICE_GRPC_MAX_CONNECTION_AGE_MS',
    help: "send GOAWAY to a gRPC connection this old (±10 %) so that its client reconnects and re-resolves, as Envoy ratelimit's GRPC_MAX_CONNECTION_AGE; 0 never (default 86400000, 24 h)",
    parse: delayMs,
  },
  grpcMaxConnectionAgeGraceMs: {
    flag: '--grpc-max-connection-age-grace-ms',
    env: 'SLUICE_GRPC_MAX_CONNECTION_AGE_GRACE_MS',
    help: 'after that GOAWAY, how long calls in flight may go on before the connection is cut (default 3600000, 1 h)',
    parse: delayMs,
  },
  grpcMaxConnectionIdleMs: {
    flag: '--grpc-max-connection-idle-ms',
    env: 'SLUICE_GRPC_MAX_CONNECTION_IDLE_MS',
    help: "send GOAWAY to a gRPC connection with no call in flight for this long, as gRPC's MAX_CONNECTION_IDLE; 0 never (default 300000, 5 min)",
    parse: delayMs,
  },
  grpcMaxConcurrentStreams: {
    flag: '--grpc-max-concurrent-streams',
    env: 'SLUICE_GRPC_MAX_CONCURRENT_STREAMS',
    help: 'calls one gRPC connection may have in flight at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS) (default 1000)',
    parse: int(1),
  },
  grpcKeepaliveTimeMs: {
    flag: '--grpc-keepalive-time-ms',
    env: 'SLUICE_GRPC_KEEPALIVE_TIME_MS',
    help: "ping a gRPC connection that has been quiet this long, to find a peer that is gone, as gRPC's KEEPALIVE_TIME; 0 never (default 60000)",
    parse: delayMs,
  },
  grpcKeepaliveTimeoutMs: {
    flag: '--grpc-keepalive-timeout-ms',
    env: 'SLUICE_GRPC_KEEPALIVE_TIMEOUT_MS',
    help: "close a gRPC connection whose ping is not answered within this, as gRPC's KEEPALIVE_TIMEOUT (default 20000)",
    parse: int(1),
  },
  headersTimeoutMs: {
    flag: '--headers-timeout-ms',
    env: 'SLUICE_HEADERS_TIMEOUT_MS',
    help: "close a connection (HTTP or gRPC) that has not sent a request's headers within this; slow clients hold no socket for long (default 5000)",
    parse: int(1),
  },
  requestTimeoutMs: {
    flag: '--request-timeout-ms',
    env: 'SLUICE_REQUEST_TIMEOUT_MS',
    help: 'answer 408 and close an HTTP request that has not arrived whole (headers and body) within this (default 10000)',
    parse: int(1),
  },
  keepAliveTimeoutMs: {
    flag: '--keep-alive-timeout-ms',
    env: 'SLUICE_KEEP_ALIVE_TIMEOUT_MS',
    help: "close an idle HTTP keep-alive connection after this; longer than a load balancer's usual 60 s, so the gateway closes first (default 65000)",
    parse: int(1),
  },
  maxConnections: {
    flag: '--max-connections',
    env: 'SLUICE_MAX_CONNECTIONS',
    help: 'open connections each listener (HTTP, gRPC, admin) holds at most; at the cap the longest-idle connection is closed to admit a new one, and a new one is refused only when every connection is busy (default 4096; keep ulimit -n above three times this)',
    parse: int(1),
  },
  maxConnectionsPerAddress: {
    flag: '--max-connections-per-address',
    env: 'SLUICE_MAX_CONNECTIONS_PER_ADDRESS',
    help: "open connections one client address (IPv6: one /64) holds on each listener at most; at it, that address's own longest-idle connection makes room (default 1024)",
    parse: int(1),
  },
  grpcMaxPendingCallsPerConnection: {
    flag: '--grpc-max-pending-calls-per-connection',
    env: 'SLUICE_GRPC_MAX_PENDING_CALLS_PER_CONNECTION',
    help: 'gRPC calls one connection holds while their message has not arrived whole; one more on it is RESOURCE_EXHAUSTED (default 256)',
    parse: int(1),
  },
  grpcMaxPendingCallsPerAddress: {
    flag: '--grpc-max-pending-calls-per-address',
    env: 'SLUICE_GRPC_MAX_PENDING_CALLS_PER_ADDRESS',
    help: 'gRPC calls one client address (IPv6: one /64) holds while their message has not arrived whole; at it (and at --grpc-max-pending-calls) the connection holding the most gives up its oldest (default 1024)',
    parse: int(1),
  },
  grpcMaxPendingBytes: {
    flag: '--grpc-max-pending-bytes',
    env: 'SLUICE_GRPC_MAX_PENDING_BYTES',
    help: 'bytes the gRPC calls whose message has not arrived whole hold together, across connections; past it, the client address holding the most gives up its largest calls, RESOURCE_EXHAUSTED (default 67108864, 64 MiB)',
    parse: int(1),
  },
  grpcMaxPendingBytesPerAddress: {
    flag: '--grpc-max-pending-bytes-per-address',
    env: 'SLUICE_GRPC_MAX_PENDING_BYTES_PER_ADDRESS',
    help: "bytes such calls from one client address (IPv6: one /64) hold; past it, that address's connection holding the most gives up its largest call (default 16777216, 16 MiB)",
    parse: int(1),
  },
  drainMs: {
    flag: '--drain-ms',
    env: 'SLUICE_DRAIN_MS',
    help: 'on SIGTERM, how long /readyz and gRPC health answer not-serving while decisions go on, so balancers stop sending, before the listeners close (default 5000)',
    parse: delayMs,
  },
  grpcTlsCert: {
    flag: '--grpc-tls-cert',
    env: 'SLUICE_GRPC_TLS_CERT',
    help: 'PEM certificate chain: serve gRPC over TLS (with --grpc-tls-key; SIGHUP re-reads both)',
    parse: str,
  },
  grpcTlsKey: {
    flag: '--grpc-tls-key',
    env: 'SLUICE_GRPC_TLS_KEY',
    help: 'PEM private key of --grpc-tls-cert',
    parse: str,
  },
  grpcTlsClientCa: {
    flag: '--grpc-tls-client-ca',
    env: 'SLUICE_GRPC_TLS_CLIENT_CA',
    help: 'PEM CA: require client certificates it signed (mutual TLS)',
    parse: str,
  },
  redis: {
    flag: '--redis',
    env: 'SLUICE_REDIS',
    help: 'Redis URL, e.g. redis://127.0.0.1:6379 (default: in-memory store)',
    parse: str,
  },
  redisPerSecond: {
    flag: '--redis-per-second',
    env: 'SLUICE_REDIS_PER_SECOND',
    help: "a second Redis URL for rules whose windows are at most 1 s, as Envoy ratelimit's REDIS_PERSECOND (needs a main Redis; credentials and rediss:// from its own URL)",
    parse: matching(/^rediss?:\/\/[^\s]+$/, 'a redis:// or rediss:// URL'),
  },
  redisCluster: {
    flag: '--redis-cluster',
    env: 'SLUICE_REDIS_CLUSTER',
    help: 'Redis Cluster seed nodes host:port,host:port',
    parse: str,
  },
  redisSentinel: {
    flag: '--redis-sentinel',
    env: 'SLUICE_REDIS_SENTINEL',
    help: 'Redis Sentinels, <master name>@host:port,host:port: decide on the primary they name, across failovers',
    parse: matching(
      /^[^@\s]+@[^\s,:]+:\d+(,[^\s,:]+:\d+)*$/,
      '<master name>@host:port[,host:port...], e.g. mymaster@10.0.0.1:26379,10.0.0.2:26379',
    ),
  },
  redisPrefix: {
    flag: '--redis-prefix',
    env: 'SLUICE_REDIS_PREFIX',
    help: 'key prefix in Redis (default sluice)',
    parse: str,
  },
  redisUsername: {
    flag: '--redis-username',
    env: 'SLUICE_REDIS_USERNAME',
    help: 'Redis ACL user (default: the default user)',
    parse: str,
  },
  redisPassword: {
    flag: '--redis-password',
    env: 'SLUICE_REDIS_PASSWORD',
    help: 'Redis password (AUTH); prefer the environment variable, which ps does not show',
    parse: str,
  },
  redisTls: {
    flag: '--redis-tls',
    env: 'SLUICE_REDIS_TLS',
    help: "TLS to Redis, checked against the system's CAs (default false; a rediss:// URL turns it on)",
    parse: bool,
  },
  redisTlsCa: {
    flag: '--redis-tls-ca',
    env: 'SLUICE_REDIS_TLS_CA',
    help: "PEM CA that signed Redis's certificate; implies --redis-tls",
    parse: str,
  },
  redisTimeoutMs: {
    flag: '--redis-timeout-ms',
    env: 'SLUICE_REDIS_TIMEOUT_MS',
    help: 'longest wait for Redis per call (default 50)',
    parse: int(1),
  },
  redisConnectTimeoutMs: {
    flag: '--redis-connect-timeout-ms',
    env: 'SLUICE_REDIS_CONNECT_TIMEOUT_MS',
    help: 'start-up wait for Redis before serving anyway (default 3000)',
    parse: int(0),
  },
  region: {
    flag: '--region',
    env: 'SLUICE_REGION',
    help: "this service's region, with --region-peers and --redis or --redis-cluster (this region's Redis): one limit per descriptor across regions, fixed-window rules only",
    parse: matching(/^[A-Za-z0-9_.-]{1,64}$/, "a region name of letters, digits, '.', '_' or '-'"),
  },
  regionPeers: {
    flag: '--region-peers',
    env: 'SLUICE_REGION_PEERS',
    help: "the other regions' Redis, name=redis://host:port,name=redis://host:port (with --region)",
    parse: matching(
      /^[A-Za-z0-9_.-]{1,64}=rediss?:\/\/[^\s,]+(,[A-Za-z0-9_.-]{1,64}=rediss?:\/\/[^\s,]+)*$/,
      'name=redis://host:port[,name=redis://host:port...]',
    ),
  },
  regionExchangeMs: {
    flag: '--region-exchange-ms',
    env: 'SLUICE_REGION_EXCHANGE_MS',
    help: "how often this service pushes its region's counts to the others (default 100)",
    parse: int(1),
  },
  failureMode: {
    flag: '--failure-mode',
    env: 'SLUICE_FAILURE_MODE',
    help: 'when Redis is down: open (admit) or closed (reject; /readyz fails) (default open)',
    parse: oneOf('open', 'closed'),
  },
  clock: {
    flag: '--clock',
    env: 'SLUICE_CLOCK',
    help: 'in-memory store: coarse (read once per 1 ms tick or 64 decisions) or monotonic (every decision) (default coarse)',
    parse: oneOf('coarse', 'monotonic'),
  },
  maxKeys: {
    flag: '--max-keys',
    env: 'SLUICE_MAX_KEYS',
    help: 'in-memory store: most keys kept (default 1000000)',
    parse: int(1),
  },
  memoryOnFull: {
    flag: '--memory-on-full',
    env: 'SLUICE_MEMORY_ON_FULL',
    help: 'in-memory store at --max-keys with every key it could evict denying: deny or allow a new key, untracked (default deny)',
    parse: oneOf('allow', 'deny'),
  },
  maxBodyBytes: {
    flag: '--max-body-bytes',
    env: 'SLUICE_MAX_BODY_BYTES',
    help: 'largest request body (default 65536)',
    parse: int(1),
  },
  maxConfigBytes: {
    flag: '--max-config-bytes',
    env: 'SLUICE_MAX_CONFIG_BYTES',
    help: 'largest config, all its YAML files together, in bytes: a bigger one is refused at start and on reload (default 16777216)',
    parse: int(1),
  },
  maxRules: {
    flag: '--max-rules',
    env: 'SLUICE_MAX_RULES',
    help: 'most rate_limit blocks in the config: more are refused at start and on reload (default 100000)',
    parse: int(1),
  },
  logLevel: {
    flag: '--log-level',
    env: 'SLUICE_LOG_LEVEL',
    help: 'trace, debug, info, warn, error or fatal (default info)',
    parse: str,
  },
  watch: { flag: '--watch', env: 'SLUICE_WATCH', help: 'reload when the config changes (default true)', parse: bool },
  maxDetailedSeries: {
    flag: '--max-detailed-series',
    env: 'SLUICE_MAX_DETAILED_SERIES',
    help: 'detailed_metric: series per rule before further values share one "(other)" series (default 100)',
    parse: int(0),
  },
  shadowMode: {
    flag: '--shadow-mode',
    env: 'SLUICE_SHADOW_MODE',
    help: "global shadow mode, as Envoy ratelimit's SHADOW_MODE: rules decide and count, every answer is OK (default false)",
    parse: bool,
  },
  strictDomains: {
    flag: '--strict-domains',
    env: 'SLUICE_STRICT_DOMAINS',
    help: 'answer a domain no config names with 400 / INVALID_ARGUMENT; by default it is OK, as Envoy ratelimit answers (default false)',
    parse: bool,
  },
  nearLimitRatio: {
    flag: '--near-limit-ratio',
    env: 'SLUICE_NEAR_LIMIT_RATIO',
    help: "share of a limit after which a hit within it counts as near (sluice_rule_near_limit_total), as Envoy ratelimit's NEAR_LIMIT_RATIO (default 0.8)",
    parse: ratio,
  },
  stopCacheKeyIncrementWhenOverlimit: {
    flag: '--stop-cache-key-increment-when-overlimit',
    env: 'SLUICE_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT',
    envoyEnv: 'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT',
    help: "don't count a hit over its limit (sluice's library semantics); by default fixed-window rules count it, as Envoy ratelimit does; STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT is read too (default false)",
    parse: bool,
  },
  answers: {
    flag: '--answers',
    env: 'SLUICE_ANSWERS',
    help: 'envoy: whole-second durations and no headers unless --limit-response-headers-enabled, as Envoy ratelimit; sluice: millisecond durations and RateLimit + Retry-After headers on every answer (default envoy)',
    parse: oneOf('envoy', 'sluice'),
  },
  limitResponseHeadersEnabled: {
    flag: '--limit-response-headers-enabled',
    env: 'SLUICE_LIMIT_RESPONSE_HEADERS_ENABLED',
    envoyEnv: 'LIMIT_RESPONSE_HEADERS_ENABLED',
    help: "add RateLimit-Limit, -Remaining and -Reset to gRPC answers, as Envoy ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED, read too (default false)",
    parse: bool,
  },
  limitLimitHeader: {
    flag: '--limit-limit-header',
    env: 'SLUICE_LIMIT_LIMIT_HEADER',
    envoyEnv: 'LIMIT_LIMIT_HEADER',
    help: 'name of the limit header; LIMIT_LIMIT_HEADER is read too (default RateLimit-Limit)',
    parse: HEADER_NAME,
  },
  limitRemainingHeader: {
    flag: '--limit-remaining-header',
    env: 'SLUICE_LIMIT_REMAINING_HEADER',
    envoyEnv: 'LIMIT_REMAINING_HEADER',
    help: 'name of the remaining header; LIMIT_REMAINING_HEADER is read too (default RateLimit-Remaining)',
    parse: HEADER_NAME,
  },
  limitResetHeader: {
    flag: '--limit-reset-header',
    env: 'SLUICE_LIMIT_RESET_HEADER',
    envoyEnv: 'LIMIT_RESET_HEADER',
    help: 'name of the reset header; LIMIT_RESET_HEADER is read too (default RateLimit-Reset)',
    parse: HEADER_NAME,
  },
  demoUrl: {
    flag: '--demo-url',
    env: 'SLUICE_DEMO_URL',
    help: 'URL of the login demo (npm run demo) for the dashboard to link to (default: no link)',
    parse: (raw, where) => {
      if (!/^https?:\/\/[^\s"'<>]+$/.test(raw))
        throw new SettingsError(`${where} must be an http(s) URL, got ${JSON.stringify(raw)}`);
      return raw;
    },
  },
};

export const DEFAULTS: Omit<Settings, 'config'> = {
  mergeDomainConfig: false,
  host: '127.0.0.1',
  port: 8080,
  grpcPort: 8081,
  adminPort: 6070,
  adminHost: '127.0.0.1',
  adminToken: undefined,
  adminHosts: [],
  adminMaxEventStreams: 64,
  adminEventStreamMs: 300_000,
  grpcMaxPendingCalls: 4096,
  grpcMaxConnectionAgeMs: 86_400_000,
  grpcMaxConnectionAgeGraceMs: 3_600_000,
  grpcMaxConnectionIdleMs: 300_000,
  grpcMaxConcurrentStreams: 1000,
  grpcKeepaliveTimeMs: 60_000,
  grpcKeepaliveTimeoutMs: 20_000,
  headersTimeoutMs: 5000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 4096,
  maxConnectionsPerAddress: 1024,
  grpcMaxPendingCallsPerConnection: 256,
  grpcMaxPendingCallsPerAddress: 1024,
  grpcMaxPendingBytes: 64 * 1024 * 1024,
  grpcMaxPendingBytesPerAddress: 16 * 1024 * 1024,
  drainMs: 5000,
  grpcTlsCert: undefined,
  grpcTlsKey: undefined,
  grpcTlsClientCa: undefined,
  redis: undefined,
  redisCluster: undefined,
  redisSentinel: undefined,
  redisPerSecond: undefined,
  region: undefined,
  regionPeers: undefined,
  regionExchangeMs: 100,
  redisPrefix: 'sluice',
  redisUsername: undefined,
  redisPassword: undefined,
  redisTls: false,
  redisTlsCa: undefined,
  redisTimeoutMs: 50,
  redisConnectTimeoutMs: 3000,
  failureMode: 'open',
  maxKeys: 1_000_000,
  memoryOnFull: 'deny',
  clock: 'coarse',
  maxBodyBytes: 65_536,
  maxConfigBytes: 16 * 1024 * 1024,
  maxRules: 100_000,
  logLevel: 'info',
  watch: true,
  maxDetailedSeries: 100,
  demoUrl: undefined,
  shadowMode: false,
  strictDomains: false,
  nearLimitRatio: 0.8,
  stopCacheKeyIncrementWhenOverlimit: false,
  answers: 'envoy',
  limitResponseHeadersEnabled: false,
  limitLimitHeader: 'RateLimit-Limit',
  limitRemainingHeader: 'RateLimit-Remaining',
  limitResetHeader: 'RateLimit-Reset',
};

export class SettingsError extends Error {
  override readonly name = 'SettingsError';
}

/** The bytes of a file a setting names (a certificate, a key, a CA); a failure names the setting and the file. */
export function readSettingFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new SettingsError(`${flag} ${file}: cannot read it: ${(e as Error).message}`);
  }
}

/** Reads flags (`--port 9000` or `--port=9000`) over environment variables over defaults. */
export function readSettings(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  allowed: readonly (keyof Settings)[] = Object.keys(SETTINGS) as (keyof Settings)[],
): Settings {
  const out: Record<string, unknown> = { ...DEFAULTS };
  const byFlag = new Map(allowed.map((k) => [SETTINGS[k].flag, k]));
  for (const k of allowed) {
    const spec = SETTINGS[k];
    // sluice's own name first; then Envoy ratelimit's, so its deployment's environment works unchanged.
    const name =
      (env[spec.env] === undefined || env[spec.env] === '') && spec.envoyEnv !== undefined ? spec.envoyEnv : spec.env;
    const raw = env[name];
    if (raw !== undefined && raw !== '') out[k] = spec.parse(raw, name);
  }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const k = byFlag.get(flag);
    if (k === undefined)
      throw new SettingsError(`unknown option ${JSON.stringify(arg)}; known options: ${[...byFlag.keys()].join(', ')}`);
    const raw = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (raw === undefined) throw new SettingsError(`${flag} needs a value`);
    out[k] = SETTINGS[k].parse(raw, flag);
  }
  if (out.config === undefined)
    throw new SettingsError(`--config (or SLUICE_CONFIG) is required: the YAML file or folder of rate limits`);
  const backends = (['redis', 'redisCluster', 'redisSentinel'] as const).filter((k) => out[k] !== undefined);
  if (backends.length > 1)
    throw new SettingsError(
      `give one of --redis, --redis-cluster or --redis-sentinel, not ${backends.map((k) => SETTINGS[k].flag).join(' and ')}`,
    );
  if (out.redisPerSecond !== undefined && backends.length === 0)
    throw new SettingsError(
      `--redis-per-second needs a main Redis (--redis, --redis-cluster or --redis-sentinel) for the rules of longer windows`,
    );
  if ((out.region === undefined) !== (out.regionPeers === undefined))
    throw new SettingsError(
      `--region and --region-peers go together; only ${out.region === undefined ? '--region-peers' : '--region'} was given`,
    );
  if (
    out.region !== undefined &&
    ((out.redis === undefined && out.redisCluster === undefined) || out.redisPerSecond !== undefined)
  ) {
    throw new SettingsError(
      `--region needs --redis or --redis-cluster (this region's own Redis), and neither --redis-sentinel nor --redis-per-second: regions are not built on those yet`,
    );
  }
  if ((out.grpcTlsCert === undefined) !== (out.grpcTlsKey === undefined)) {
    throw new SettingsError(
      `--grpc-tls-cert and --grpc-tls-key go together; only ${out.grpcTlsCert === undefined ? '--grpc-tls-key' : '--grpc-tls-cert'} was given`,
    );
  }
  if ((out.requestTimeoutMs as number) < (out.headersTimeoutMs as number)) {
    throw new SettingsError(
      `--request-timeout-ms (${out.requestTimeoutMs}) must be at least --headers-timeout-ms (${out.headersTimeoutMs}): a request's headers are part of it`,
    );
  }
  if (out.adminPort !== -1 && out.adminPort !== 0 && (out.adminPort === out.port || out.adminPort === out.grpcPort)) {
    throw new SettingsError(
      `--admin-port (${out.adminPort}) must differ from --port and --grpc-port: the dashboard's streams stay off the decision ports; -1 disables it`,
    );
  }
  if (
    out.adminPort !== -1 &&
    out.adminToken === undefined &&
    !isLoopback(out.adminHost as string) &&
    env.NODE_ENV === 'production'
  ) {
    throw new SettingsError(
      `--admin-host ${out.adminHost} opens the dashboard, /config and /metrics beyond this host with no --admin-token (or SLUICE_ADMIN_TOKEN); NODE_ENV=production has no default secret: set a token, bind it to 127.0.0.1, or disable it with --admin-port -1`,
    );
  }
  if (out.grpcTlsClientCa !== undefined && out.grpcTlsCert === undefined)
    throw new SettingsError(`--grpc-tls-client-ca needs --grpc-tls-cert and --grpc-tls-key: mutual TLS is TLS first`);
  return out as unknown as Settings;
}

/** Whether an address to listen on is this host only: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export function settingsHelp(keys: readonly (keyof Settings)[]): string {
  const rows = keys.map((k) => [`${SETTINGS[k].flag} <v>`, SETTINGS[k].env, SETTINGS[k].help]);
  const w0 = Math.max(...rows.map((r) => r[0]!.length));
  const w1 = Math.max(...rows.map((r) => r[1]!.length));
  return rows.map((r) => `  ${r[0]!.padEnd(w0)}  ${r[1]!.padEnd(w1)}  ${r[2]}`).join('\n');
}
