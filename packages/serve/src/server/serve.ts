/**
 * Wires `sluice serve` together: config, store, rules, HTTP and gRPC servers, metrics, dashboard, reload on
 * file change, graceful stop. The CLI adds signals; tests call startService() directly.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { createAdminServer } from './operator/admin.js';
import { configFiles, ConfigError, loadConfig } from './config/config.js';
import { configNotes } from './config/config-notes.js';
import { Dashboard } from './operator/dashboard.js';
import { createGrpcServer } from './endpoints/grpc.js';
import type { GrpcTls } from './endpoints/grpc.js';
import { createHttpServer } from './endpoints/http.js';
import { closeAfterCurrentRequests, connectionCounts } from './endpoints/http-accept.js';
import { createMetrics } from './operator/metrics.js';
import type { Shedding } from './operator/metrics.js';
import { RuleSet } from './config/rules.js';
import { loadRulesOffThread } from './config/config-reload.js';
import {
  loadOpenTelemetry,
  MemoryStore,
  monotonicClock,
  openTelemetry,
  type OpenTelemetryApi,
  type Telemetry,
} from 'sluice/kit';
import { RateLimitService } from './service.js';
import { isLoopback, readSettingFile, SettingsError } from './config/settings.js';
import type { Settings } from './config/settings.js';
import { storeFromSettings } from './config/store-from-settings.js';

export interface RunningService {
  readonly httpPort: number;
  /** undefined when gRPC is disabled (--grpc-port -1). */
  readonly grpcPort: number | undefined;
  /** The dashboard, /events, /config and /metrics; undefined when disabled (--admin-port -1). */
  readonly adminPort: number | undefined;
  readonly service: RateLimitService;
  readonly log: Logger;
  /** Re-reads the config. Resolves true if applied; false if invalid (the old config stays, the reason is logged). */
  reload(reason: string): Promise<boolean>;
  /**
   * Drains, then stops: for `drainMs` (default 0) /readyz and gRPC health say not-serving while decisions go
   * on, so that balancers stop sending; then the listeners stop accepting, keep-alive connections are
   * closed after their current request (`Connection: close`, GOAWAY), in-flight requests finish (at most
   * `graceMs`), and the store is closed.
   */
  close(graceMs?: number, drainMs?: number): Promise<void>;
}

export interface StartOptions {
  /** Where JSON logs go; default stdout. */
  readonly logStream?: NodeJS.WritableStream;
  /** Dashboard sampling interval (tests shorten it). */
  readonly sampleMs?: number;
}

export async function startService(settings: Settings, options: StartOptions = {}): Promise<RunningService> {
  const log = pino(
    { level: settings.logLevel, base: { service: 'sluice' } },
    (options.logStream ?? process.stdout) as never,
  );
  const configOptions = {
    mergeDomains: settings.mergeDomainConfig,
    maxBytes: settings.maxConfigBytes,
    maxRules: settings.maxRules,
  };
  const config = loadConfig(settings.config, configOptions); // throws ConfigError: the CLI prints every problem and exits 1
  for (const note of configNotes(config)) log.warn({ domain: note.domain }, note.message);
  const tls = readGrpcTls(settings); // throws SettingsError naming the file, before anything listens
  const backing = await storeFromSettings(settings, log);
  // The memory store's clock: the library's default (coarse) unless --clock monotonic. Redis keeps its own time.
  const clock = settings.clock === 'monotonic' && backing.kind === 'memory' ? { clock: monotonicClock } : {};
  const telemetry = await serviceTelemetry(log);
  // Envoy's counting (over-limit hits count) unless STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT.
  const countRejected = !settings.stopCacheKeyIncrementWhenOverlimit;
  const ruleOptions = {
    store: backing.store,
    maxDetailedSeries: settings.maxDetailedSeries,
    telemetry,
    countRejected,
    ...clock,
  };
  // A rule the store refuses (e.g. an algorithm regions cannot keep) must not leave its clients open.
  let rules: RuleSet;
  try {
    rules = new RuleSet(config, ruleOptions);
  } catch (e) {
    await backing.close();
    throw e;
  }
  const service = new RateLimitService(rules, {
    store: backing.store,
    localCache: backing.kind !== 'memory',
    globalShadowMode: settings.shadowMode,
    strictDomains: settings.strictDomains,
    nearLimitRatio: settings.nearLimitRatio,
    telemetry,
    countRejected,
    ...clock,
  });
  const reloads = { ok: 0, failed: 0 };
  // The listeners are made below; /metrics reads their shedding when scraped.
  const shedding = (): Shedding[] => [
    { listener: 'http', ...connectionCounts(http) },
    ...(admin === undefined ? [] : [{ listener: 'admin' as const, ...connectionCounts(admin) }]),
    ...(grpcServer === undefined ? [] : [{ listener: 'grpc' as const, ...grpcServer.shedding() }]),
  ];
  const metrics = createMetrics(() => service.allStats(), {
    reloads: () => reloads,
    globalShadowOverrides: () => service.globalShadowOverrides,
    shedding,
  });
  let decisionPort: number | undefined;
  const dashboard = new Dashboard(() => service, options.sampleMs, {
    demoUrl: settings.demoUrl,
    configRoot: settings.config,
    maxStreams: settings.adminMaxEventStreams,
    streamMs: settings.adminEventStreamMs,
    decisionPort: () => decisionPort,
  });
  let stopping = false;

  // Every listener opened so far, closed again should a later one fail to bind: the process then exits with
  // the error instead of lingering half-started.
  const opened: { close(): Promise<void> }[] = [];
  const failStart = async (e: unknown): Promise<never> => {
    for (const o of opened) await o.close();
    await backing.close();
    throw e;
  };
  const listen = (server: Server, port: number, host: string) =>
    new Promise<number>((res, rej) => {
      server.once('error', rej);
      server.listen(port, host, () => {
        server.off('error', rej);
        opened.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
        res((server.address() as AddressInfo).port);
      });
    });

  // The limits are given at creation and never set again: a server's headersTimeout set afterwards would
  // replace --headers-timeout-ms (it once did, with 66 s).
  const http = createHttpServer({
    service,
    log,
    maxBodyBytes: settings.maxBodyBytes,
    ready: backing.ready,
    stopping: () => stopping,
    limits: settings,
  });
  const httpPort = await listen(http, settings.port, settings.host).catch(failStart);
  decisionPort = httpPort;
  const health = { ready: backing.ready, stopping: () => stopping };
  const admin =
    settings.adminPort < 0
      ? undefined
      : createAdminServer({
          dashboard,
          metrics,
          log,
          health,
          token: settings.adminToken,
          hosts: settings.adminHosts,
          limits: settings,
        });
  const adminPort =
    admin === undefined ? undefined : await listen(admin, settings.adminPort, settings.adminHost).catch(failStart);
  if (admin !== undefined && settings.adminToken === undefined && !isLoopback(settings.adminHost)) {
    log.warn(
      { adminHost: settings.adminHost, adminPort },
      'the admin port (dashboard, /config, /metrics) is open beyond this host with no --admin-token; set one (NODE_ENV=production refuses to start without it)',
    );
  }
  let grpcServer: ReturnType<typeof createGrpcServer> | undefined;
  let grpcPort: number | undefined;
  if (settings.grpcPort >= 0) {
    grpcServer = createGrpcServer({
      service: () => service,
      log,
      maxMessageBytes: settings.maxBodyBytes,
      serving: async () => !stopping && (await backing.ready()),
      envoyWire:
        settings.answers === 'sluice'
          ? undefined
          : {
              headers: settings.limitResponseHeadersEnabled
                ? {
                    limit: settings.limitLimitHeader,
                    remaining: settings.limitRemainingHeader,
                    reset: settings.limitResetHeader,
                  }
                : undefined,
            },
      maxConnectionAgeMs: settings.grpcMaxConnectionAgeMs,
      maxConnectionAgeGraceMs: settings.grpcMaxConnectionAgeGraceMs,
      maxConnectionIdleMs: settings.grpcMaxConnectionIdleMs,
      maxConcurrentStreams: settings.grpcMaxConcurrentStreams,
      keepaliveTimeMs: settings.grpcKeepaliveTimeMs,
      keepaliveTimeoutMs: settings.grpcKeepaliveTimeoutMs,
      firstCallTimeoutMs: settings.headersTimeoutMs,
      maxConnections: settings.maxConnections,
      maxConnectionsPerAddress: settings.maxConnectionsPerAddress,
      messageTimeoutMs: settings.requestTimeoutMs,
      maxPendingCalls: settings.grpcMaxPendingCalls,
      maxPendingCallsPerConnection: settings.grpcMaxPendingCallsPerConnection,
      maxPendingCallsPerAddress: settings.grpcMaxPendingCallsPerAddress,
      maxPendingBytes: settings.grpcMaxPendingBytes,
      maxPendingBytesPerAddress: settings.grpcMaxPendingBytesPerAddress,
      ...(tls === undefined ? {} : { tls }),
    });
    grpcPort = await grpcServer.listen(settings.host, settings.grpcPort).catch(failStart);
  }
  dashboard.start();
  // The memory store reclaims idle keys as new ones arrive; a rule that gets no new keys has its idle ones
  // swept here. (A rule a reload drops or changes has its table freed at the swap: RuleSet.releaseDropped.)
  const sweeper =
    backing.store instanceof MemoryStore
      ? setInterval(() => (backing.store as MemoryStore).sweep(), 30_000)
      : undefined;
  sweeper?.unref();

  // One reload at a time, each on the rules the one before it left.
  let reloading: Promise<boolean> = Promise.resolve(true);
  function reload(reason: string): Promise<boolean> {
    reloading = reloading.then(() => reloadNow(reason));
    return reloading;
  }

  async function reloadNow(reason: string): Promise<boolean> {
    if (tls !== undefined && grpcServer !== undefined) {
      // A rotated certificate (cert-manager, a renewed file) takes effect for new connections.
      try {
        grpcServer.setTls(readGrpcTls(settings)!);
        log.info({ reason, cert: settings.grpcTlsCert }, 'gRPC TLS files re-read');
      } catch (e) {
        log.error(
          { reason, err: (e as Error).message },
          'gRPC TLS files rejected; the previous certificate stays in use',
        );
      }
    }
    try {
      // Read and built off the decision path (config-reload.ts), then swapped in at once.
      const next = await loadRulesOffThread(settings.config, configOptions, ruleOptions, rules);
      for (const note of configNotes(next.config)) log.warn({ reason, domain: note.domain }, note.message);
      rules = next;
      service.replaceRules(next);
      reloads.ok++;
      log.info({ reason, rules: next.rules.size, kept: next.kept }, 'config reloaded');
      return true;
    } catch (e) {
      reloads.failed++;
      const problems = e instanceof ConfigError ? e.problems : [String((e as Error).message)];
      log.error({ reason, problems }, 'config reload rejected; the previous config stays in force');
      return false;
    }
  }

  // Watch the folders, not the files: editors and Kubernetes ConfigMaps replace files by rename, which
  // ends a watch on the old inode. Changes are debounced so one save is one reload.
  const watchers: FSWatcher[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (settings.watch) {
    const files = new Set(configFiles(settings.config).map((f) => resolve(f)));
    const dirs = new Set([...files].map((f) => dirname(f)));
    for (const dir of dirs) {
      const w = watch(dir, (_event, name) => {
        if (name !== null && !/\.ya?ml$/.test(String(name)) && !String(name).startsWith('..')) return;
        clearTimeout(timer);
        timer = setTimeout(() => void reload('file change'), 100);
      });
      w.unref();
      watchers.push(w);
    }
  }

  log.info(
    {
      http: httpPort,
      grpc: grpcPort ?? 'off',
      admin: adminPort ?? 'off',
      store: backing.kind,
      ...(settings.redisPerSecond !== undefined ? { perSecondStore: 'redis' } : {}),
      domains: [...config.domains.keys()],
      rules: rules.rules.size,
      ...(settings.shadowMode ? { shadowMode: 'global: every answer is OK' } : {}),
    },
    'sluice serve listening',
  );

  return {
    httpPort,
    grpcPort,
    adminPort,
    service,
    log,
    reload,
    async close(graceMs = 10_000, drainMs = 0) {
      if (stopping) return;
      stopping = true; // /readyz, /healthz and gRPC health answer not-serving from now
      if (drainMs > 0) {
        // Issue 45, finding 7: the listeners once closed 67 ms after SIGTERM, before any balancer could see
        // /readyz fail; keep-alive clients got errors. Decisions go on meanwhile.
        log.info(
          { drainMs },
          'shutting down: /readyz and gRPC health say not serving; decisions go on while balancers notice',
        );
        await new Promise((res) => setTimeout(res, drainMs));
      }
      log.info('shutting down: draining in-flight requests');
      for (const w of watchers) w.close();
      clearTimeout(timer);
      dashboard.stop();
      clearInterval(sweeper);
      // A keep-alive connection busy now is closed after its current request: its answer says so.
      closeAfterCurrentRequests(http);
      const httpClosed = new Promise<void>((res) => http.close(() => res()));
      http.closeIdleConnections();
      // The dashboard's streams were ended above; the admin port has nothing else to drain.
      admin?.close();
      admin?.closeAllConnections();
      const grpcClosed = grpcServer === undefined ? Promise.resolve() : grpcServer.close();
      const deadline = new Promise<void>((res) => setTimeout(res, graceMs).unref());
      await Promise.race([Promise.all([httpClosed, grpcClosed]), deadline]);
      http.closeAllConnections();
      grpcServer?.destroy();
      await backing.close();
      log.info('stopped');
    },
  };
}

/**
 * The gRPC TLS files, read now (at start, and again on reload), or undefined without TLS. Every failure names
 * the setting and the file.
 */
function readGrpcTls(settings: Settings): GrpcTls | undefined {
  if (settings.grpcTlsCert === undefined || settings.grpcTlsKey === undefined) return undefined;
  const tls: GrpcTls = {
    cert: readSettingFile('--grpc-tls-cert', settings.grpcTlsCert),
    key: readSettingFile('--grpc-tls-key', settings.grpcTlsKey),
    ...(settings.grpcTlsClientCa === undefined
      ? {}
      : { clientCa: readSettingFile('--grpc-tls-client-ca', settings.grpcTlsClientCa) }),
  };
  try {
    createSecureContext({ cert: tls.cert, key: tls.key, ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }) });
  } catch (e) {
    throw new SettingsError(
      `--grpc-tls-cert ${settings.grpcTlsCert} with --grpc-tls-key ${settings.grpcTlsKey}${settings.grpcTlsClientCa === undefined ? '' : ` and --grpc-tls-client-ca ${settings.grpcTlsClientCa}`}: not a usable certificate, key and CA: ${(e as Error).message}`,
    );
  }
  return tls;
}

/**
 * OpenTelemetry for the service when @opentelemetry/api is installed and a MeterProvider is registered
 * (e.g. `node --import @opentelemetry/auto-instrumentations-node/register`); otherwise none, at no cost.
 */
async function serviceTelemetry(log: Logger): Promise<Telemetry | undefined> {
  let api: OpenTelemetryApi & { metrics: { getMeterProvider?(): unknown } };
  try {
    api = await loadOpenTelemetry();
  } catch {
    return undefined;
  }
  const provider = api.metrics.getMeterProvider?.();
  if (provider === undefined || (provider as object).constructor?.name === 'NoopMeterProvider') return undefined;
  log.info(
    { meter: 'sluice' },
    'OpenTelemetry metrics on: decisions (sluice.decisions) and store calls (sluice.store.duration)',
  );
  return openTelemetry(api);
}
