import cluster from "node:cluster";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { ConnectionError, type Sequelize } from "sequelize";
import { loadConfig, ConfigError, redisTarget, type Config } from "./config.js";
import { createLogger, type Logger } from "./platform/logger.js";
import { startTracing } from "./platform/tracing.js";
import { createSequelize } from "./platform/db.js";
import { migrate } from "./platform/migrator.js";
import { createRedis, connectRedis, redisTargetName, type RedisClient } from "./platform/redis.js";
import { createLocalBus, createRedisBus, type Bus } from "./platform/bus.js";
import { createMemoryRateLimiter, createRedisRateLimiter } from "./platform/rate-limiter.js";
import { RateLimitPolicy } from "./platform/rate-limit-policy.js";
import { createSecrets, loadOrCreateLocalSecrets, type Secrets } from "./platform/secrets.js";
import { startEmbeddedPostgres } from "./platform/embedded-postgres.js";
import { settledWithin } from "./platform/settled-within.js";
import { StartupError } from "./platform/startup-error.js";
import { createSettingsCipher, derivedKeyId, type SettingsCipher } from "./platform/settings-cipher.js";
import { createNotifications, type Notifications } from "./notifications/notifications.js";
import type { Dispatcher } from "./notifications/outbound.js";
import { createFirstTenant } from "./first-tenant.js";
import { migrations } from "./migrations/index.js";
import { IdentityStore } from "./identity/identity-store.js";
import { IdentityService } from "./identity/identity-service.js";
import { Authenticator } from "./identity/authenticator.js";
import { CronAuthenticator } from "./identity/cron-authenticator.js";
import { createSessionChecks, createSessions, type Sessions } from "./sessions/sessions.js";
import { ApiKeyService, OAuthService } from "../gen/decisioning/v1/identity_pb.js";
import { AuditService as AuditServiceDesc } from "../gen/decisioning/v1/audit_pb.js";
import { CronService as CronServiceDesc } from "../gen/decisioning/v1/scheduling_pb.js";
import { AuditStore } from "./audit/audit-store.js";
import { AuditLog } from "./audit/audit-log.js";
import { AuditService } from "./audit/audit-service.js";
import { CatalogStore, DecisionConfigStore } from "./catalog/catalog-store.js";
import { createCatalog, type Catalog } from "./catalog/catalog.js";
import { createDecisions } from "./decisions/decisions.js";
import { createExperiments, type Experiments } from "./experiments/experiments.js";
import { createExplanations } from "./explanations/explanations.js";
import { createWebhooks, type Webhooks } from "./webhooks/webhooks.js";
import { createContent } from "./content/content.js";
import { createCustomers } from "./customers/customers.js";
import { createEvents, type Events } from "./events/events.js";
import { createIngestion } from "./ingestion/ingestion.js";
import { loadedCustomerAttributes } from "./ingestion/customer-attributes.js";
import { RecommendRequestSchema } from "../gen/decisioning/v1/decisions_pb.js";
import { create } from "@bufbuild/protobuf";
import { createRedisCounters } from "./decisions/counters.js";
import { createPersistentMemoryCounters } from "./decisions/counter-persistence.js";
import { CounterSnapshotStore } from "./decisions/counter-snapshot-store.js";
import { withEvidenceCache } from "./decisions/evidence-cache.js";
import { DecisionStats } from "./decisions/decision-stats.js";
import { createAlerts } from "./alerts/alerts.js";
import { createScoringPool } from "./platform/scoring-pool.js";
import { createModelRegistry } from "./models/model-registry.js";
import { createPortability } from "./portability/portability.js";
import { createReports } from "./reports/reports.js";
import { createApprovals, type Approvals } from "./approvals/approvals.js";
import { createScim } from "./scim/scim.js";
import { createMcp } from "./mcp/mcp.js";
import { createSso, type Sso } from "./sso/sso.js";
import { createConsoleRoutes } from "./console/console-route.js";
import type { ModelPromoter } from "./models/model-promotion.js";
import { Gateway } from "./transport/gateway.js";
import type { ServiceRegistration } from "./platform/service-registration.js";
import { createHttpServer } from "./transport/http-server.js";
import type { HttpRoute } from "./transport/http-routes.js";
import { openApiRoutes } from "./openapi/openapi-routes.js";
import { createGrpcServer, bindGrpc } from "./transport/grpc.js";
import { superviseWorkers } from "./supervisor.js";
import type { ScheduledJob } from "./scheduling/scheduled-job.js";
import { createScheduler, type Scheduler, type SchedulerOptions } from "./scheduling/scheduler.js";
import { CronService } from "./scheduling/cron-service.js";
import { createObservability, type Observability } from "./observability/observability.js";
import { startMetricsServer, type MetricsServer } from "./observability/metrics-server.js";
import { shareMetricsWithSupervisor, startClusterMetricsServer } from "./observability/cluster-metrics.js";

/** The stateful parts every entry point (server, CLI, tests) needs, built the same way. */
export interface Foundation {
  config: Config;
  logger: Logger;
  db: Sequelize;
  redis: RedisClient | null;
  bus: Bus;
  secrets: Secrets;
  /** Encrypts platform settings and provider secrets (SETTINGS_ENCRYPTION_KEY[S], or the local key). */
  settingsCipher: SettingsCipher;
  /** This start created the embedded database (never true with DATABASE_URL). */
  embeddedDatabaseCreated: boolean;
  close(): Promise<void>;
}

/**
 * Database (DATABASE_URL, or the embedded Postgres with secrets generated beside its data), Redis
 * (REDIS_URL or REDIS_CLUSTER_NODES, or in-process stand-ins), migrations. Logs which of these it chose. The CLI shares
 * the embedded Postgres of a server running on the same data directory.
 */
export async function openFoundation(config: Config, logger: Logger, options: { shareEmbeddedDatabase?: boolean } = {}): Promise<Foundation> {
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const c of closers) await c().catch((err) => logger.warn({ err }, "close failed"));
  };
  let databaseUrl = config.databaseUrl;
  let secretValues = { apiKeyPepper: config.apiKeyPepper, jwtSigningSecret: config.jwtSigningSecret };
  let settingsKeys = config.settingsKeys;
  let embeddedDatabaseCreated = false;
  if (databaseUrl === null) {
    const local = loadOrCreateLocalSecrets(config.dataDir);
    secretValues = {
      apiKeyPepper: config.apiKeyPepper ?? local.apiKeyPepper,
      jwtSigningSecret: config.jwtSigningSecret ?? local.jwtSigningSecret,
    };
    if (!settingsKeys.length) settingsKeys = [{ id: derivedKeyId(local.settingsEncryptionKey), secret: local.settingsEncryptionKey }];
    const pg = await startEmbeddedPostgres(config.dataDir, local.postgresPassword, logger, {
      runtimeDir: config.embeddedPgDir,
      shareRunning: options.shareEmbeddedDatabase,
    });
    closers.unshift(pg.stop);
    databaseUrl = pg.url;
    embeddedDatabaseCreated = pg.created;
    logger.info({ dataDir: config.dataDir }, "DATABASE_URL not set: using embedded PostgreSQL and local secrets under the data directory");
  } else {
    logger.info("using PostgreSQL at DATABASE_URL");
  }
  const secrets = createSecrets(secretValues);
  for (const problem of secrets.problems()) {
    logger.warn(`SECURITY: ${problem}; key and client creation, authentication and token verification will fail until it is set`);
  }
  // Info, not a warning: nothing is exposed without the key, a feature is off until it is set.
  if (!settingsKeys.length) {
    logger.info("SETTINGS_ENCRYPTION_KEY is not set: encrypted platform settings and notification-provider secrets can be neither stored nor read until it is set");
  }
  const db = createSequelize(databaseUrl);
  closers.unshift(() => db.close());
  const applied = await migrate(db, migrations).catch((err) => closeAll().then(() => Promise.reject(unreachableDatabase(err, config))));
  if (applied.length) logger.info({ applied }, "migrations applied");

  let redis: RedisClient | null = null;
  let bus: Bus;
  const target = redisTarget(config);
  if (target) {
    redis = createRedis(target, config.redisKeyPrefix);
    redis.on("error", (err) => logger.warn({ err: err.message }, "redis error"));
    // Start-up fails on an unreachable Redis; close what is open so that the process can exit.
    await connectRedis(redis).catch((err) => closeAll().then(() => Promise.reject(err)));
    bus = await createRedisBus(redis, config.redisKeyPrefix, logger);
    closers.unshift(async () => redis!.disconnect());
    logger.info(`using Redis at ${redisTargetName(target)}`);
  } else {
    bus = createLocalBus();
    logger.info("neither REDIS_URL nor REDIS_CLUSTER_NODES set: using in-process rate limits and notifications (single node only)");
  }
  closers.unshift(() => bus.close());
  return {
    config,
    logger,
    db,
    redis,
    bus,
    secrets,
    settingsCipher: createSettingsCipher(settingsKeys),
    embeddedDatabaseCreated,
    close: closeAll,
  };
}

/** Stores and services over one foundation: what the servers, the CLI and the tests all use. */
export interface Services {
  identityStore: IdentityStore;
  identity: IdentityService;
  audit: AuditService;
  catalog: Catalog;
  decisions: ReturnType<typeof createDecisions>;
  /** Registry moves, for experiments' automatic promotion. */
  modelPromoter: ModelPromoter;
  notifications: Notifications;
  /** Sends every outbound message (alerts, reports, triggers): src/notifications/outbound.ts. */
  dispatcher: Dispatcher;
  experiments: Experiments;
  /** Inbound delivery webhooks; `webhooks.deliveryEvents` is the profile's DeliveryEventHistory. */
  webhooks: Webhooks;
  /** Metrics, request statistics shared by every process, and health alerts (for the alerts domain). */
  observability: Observability;
  /** Approvals and AI recommendations; `approvals.jobs` holds approvals-expire for the scheduler. */
  approvals: Approvals;
  /** Events, trigger rules and journeys; `events.history` is the CustomerEventHistory for the profile and CLV. */
  events: Events;
  /** Who is calling (spec 5.1, 5.4): the gateway's, and the routes outside protobuf authenticate with it too. */
  authenticator: Authenticator;
  /** Spec 8's limits: the gateway's, and the routes outside protobuf count in the same windows. */
  rateLimits: RateLimitPolicy;
  /** Tenant SSO and identity-provider sign-in; `sso.passwordSignInPolicy` is the sessions' PasswordSignInPolicy. */
  sso: Sso;
  /** Password sign-in, registration and the session cookie (docs/sessions.md). */
  sessions: Sessions;
  registrations: ServiceRegistration[];
  /** Doors outside protobuf (src/transport/http-routes.ts): sign-in, SCIM, MCP, downloads. */
  httpRoutes: HttpRoute[];
  /** Every domain's scheduled jobs, registered with the scheduler. */
  jobs: ScheduledJob[];
  /** Started by startService once the servers listen; the cron routes use it whether started or not. */
  scheduler: Scheduler;
  /** Loads the in-memory counters (without Redis) and subscribes caches to cross-process invalidation; call before serving. */
  listen(): Promise<void>;
  /**
   * Aborts work that would hold a stop for as long as it runs (ingestion runs in flight), waiting at
   * most `graceMs` for it to be recorded as failed, and refuses more: first in a stop.
   */
  interrupt(graceMs: number): Promise<void>;
  /**
   * Flushes queued traces and request statistics, saves the in-memory counters (without Redis), and
   * stops the scoring workers; what is still in flight is waited for at most `graceMs` (default
   * SHUTDOWN_GRACE_MS).
   */
  close(graceMs?: number): Promise<void>;
}

/** What a caller of startService or createServices may add to what the configuration gives. */
export interface ServiceOptions {
  /**
   * Jobs registered beside the domains' own, built on the same foundation. A test seam: tests
   * register real jobs (against the real database) to watch the scheduler run them.
   */
  extraJobs?: (f: Foundation) => ScheduledJob[];
  /** Retry policy, claim lease and the onRun hook (metrics) of the scheduler. */
  scheduler?: Pick<SchedulerOptions, "retry" | "leaseMs" | "onRun">;
  /** The clock of sessions, mailed-link lifetimes and credential caches: tests move it to cross a lifetime. */
  now?: () => number;
}

export function createServices(f: Foundation, options: ServiceOptions = {}): Services {
  const identityStore = new IdentityStore(f.db);
  const now = options.now ?? Date.now;
  const sessionChecks = createSessionChecks({ secrets: f.secrets, db: f.db, redis: f.redis, secureCookie: f.config.sessionCookieSecure, now });
  const authenticator = new Authenticator(identityStore, f.secrets, f.config.internalApiKey, f.logger, now, sessionChecks);
  const rateLimits = new RateLimitPolicy(
    f.redis ? createRedisRateLimiter(f.redis) : createMemoryRateLimiter(),
    f.config.rateLimits,
    async (tenantId) => (await identityStore.findTenant(tenantId))?.rate_limits ?? {},
    f.logger,
  );
  const auditLog = new AuditLog(new AuditStore(f.db));
  const audit = new AuditService(new AuditStore(f.db));
  // The catalog reports committed changes to the decisions' snapshot cache, built after it.
  let configChanged = (_tenantId: string) => {};
  const content = createContent({ db: f.db, audit: auditLog, configChanged: (tenantId) => configChanged(tenantId) });
  const catalog = createCatalog(
    new CatalogStore(f.db, (tenantId) => configChanged(tenantId)),
    new DecisionConfigStore(f.db),
    auditLog,
    (tenantId, userId) => identityStore.isActiveAdmin(tenantId, userId),
    [],
    content.referable,
    // Approvals are built over the catalog's writes; a publish asks them only later.
    (t, ctx, flowId) => approvals.publishGate(t, ctx, flowId),
  );
  const approvals = createApprovals({
    db: f.db,
    audit: auditLog,
    catalog,
    // The registry is built after the decisions it invalidates; an approval applies a move only later.
    registryMove: (ctx, req, t) => models.moveInTransaction(ctx, req, t),
    maxAgeHours: f.config.approvalMaxAgeHours,
    logger: f.logger,
  });
  const experiments = createExperiments({
    db: f.db,
    audit: auditLog,
    logger: f.logger,
    references: { liveIds: catalog.liveIds, positiveOutcomes: (tenantId) => decisions.positiveOutcomes(tenantId) },
    // The registry is built after the decisions it invalidates; auto-promotion calls it only later.
    promoter: { promote: (ctx, modelId, promotion) => models.promoter.promote(ctx, modelId, promotion) },
    changed: (tenantId) => configChanged(tenantId),
  });
  const observability = createObservability({ db: f.db, redis: f.redis, logger: f.logger });
  const pool = createScoringPool(f.logger, {
    threads: f.config.scoringPoolThreads ?? undefined,
    timeoutMs: f.config.scoringPoolTimeoutMs,
  });
  // Without Redis, the counters live in this process and are saved to PostgreSQL to survive a restart.
  const memoryCounters = f.redis ? null : createPersistentMemoryCounters({ store: new CounterSnapshotStore(f.db), logger: f.logger });
  const counters = f.redis ? withEvidenceCache(createRedisCounters(f.redis), { maxAgeMs: f.config.evidenceMaxAgeMs }) : memoryCounters!.counters;
  const decisions = createDecisions({
    db: f.db,
    bus: f.bus,
    logger: f.logger,
    counters,
    audit: auditLog,
    decisionConfig: catalog.decisionConfig,
    seedTenant: catalog.seedTenant,
    // Alert rules are built after the decisions; a reset reaches them only later.
    otherWorkspaceData: [(t, tenantId) => alerts.wipeTenant(t, tenantId), (t, tenantId) => ingestion.wipeTenant(t, tenantId), (t, tenantId) => reports.wipeTenant(t, tenantId), (t, tenantId) => observability.wipeTenant(t, tenantId)],
    pool,
    minTreeWalksForPool: f.config.scoringPoolMinTreeWalks,
    decisionQuota: f.config.decisionQuota,
    activeExperiments: experiments.activeExperiments,
    observer: observability.metrics,
    publishedContent: content.published,
    // Built below, from the decisions' read model; read only when a decision runs.
    clvScore: (tenantId, customerId) => customers.clvScore(tenantId, customerId),
    loadedAttributes: loadedCustomerAttributes(f.db),
  });
  const webhooks = createWebhooks({ db: f.db, secrets: f.config.webhooks, logger: f.logger });
  observability.metrics.watch({ scoringPool: pool, traces: decisions.traces });
  configChanged = decisions.configChanged;
  const models = createModelRegistry({
    db: f.db,
    audit: auditLog,
    configChanged: decisions.configChanged,
    minScoredDecisions: f.config.modelPromotionMinDecisions,
  });
  const explanations = createExplanations({ db: f.db, audit: auditLog, sources: decisions.readModel, llm: f.config.llm, pool, logger: f.logger });
  const identity = new IdentityService(identityStore, f.secrets, f.bus, catalog.seedTenant);
  const notifications = createNotifications({
    db: f.db,
    bus: f.bus,
    audit: auditLog,
    cipher: f.settingsCipher,
    outbound: f.config.outbound,
    isPlatformOwner: async (tenantId) =>
      f.config.platformOwnerTenantId !== null ? f.config.platformOwnerTenantId === tenantId : (await identityStore.findTenant(tenantId))?.platform_owner === true,
    logger: f.logger,
    // SSO, alerts and reports are built below; these reach them only later.
    sealedSecrets: [{ name: "sso", rotate: (t, keyId) => sso.rotateSecrets(t, keyId) }],
    providerUsers: [(...a) => alerts.providerUsers(...a), (...a) => reports.providerUsers(...a)],
  });
  const alerts = createAlerts({
    db: f.db,
    auditLog,
    decisionStats: new DecisionStats(f.db),
    logger: f.logger,
    dispatcher: notifications.dispatcher,
    requestStats: observability.requestStats,
    healthAlerts: observability.healthAlerts,
    providers: { existing: notifications.existingProviderIds },
  });
  const reports = createReports({
    db: f.db,
    audit: auditLog,
    experiments: { results: experiments.results },
    narratives: explanations.reportNarratives,
    dispatcher: notifications.dispatcher,
    providers: { existing: notifications.existingProviderIds },
    secrets: f.secrets,
    publicUrl: f.config.publicUrl,
    rateLimits,
    runLeaseMs: f.config.runLeaseMs,
    logger: f.logger,
  });
  const ingestion = createIngestion({
    db: f.db,
    audit: auditLog,
    cipher: f.settingsCipher,
    healthAlerts: observability.healthAlerts,
    logger: f.logger,
    allowPrivate: f.config.outbound.allowPrivate,
    stsEndpoint: f.config.ingestionStsEndpoint,
    timeoutMs: f.config.outbound.timeoutMs,
    decider: { decideBatch: decisions.decideBatch },
    customersLoaded: (tenantId) => decisions.customerTablesLoaded(tenantId),
    flows: catalog.flowKeys,
    runLeaseMs: f.config.runLeaseMs,
  });
  const events = createEvents({
    db: f.db,
    redis: f.redis,
    streamMaxLen: f.config.eventStreamMaxLen,
    retentionDays: f.config.eventRetentionDays,
    audit: auditLog,
    dispatcher: notifications.dispatcher,
    decider: {
      decide: async (ctx, customerId, step) => {
        const res = await decisions.recommend(ctx, create(RecommendRequestSchema, { customerId, flow: step.flow ?? "", limit: step.count }));
        return { recommendationId: res.recommendationId, offerIds: res.offers.map((o) => o.offerId) };
      },
    },
    providerExists: async (tenantId, id) => (await notifications.existingProviderIds(tenantId, [id])).has(id),
    flowExists: catalog.flowExists,
    logger: f.logger,
  });
  const jobs: ScheduledJob[] = [...experiments.jobs, ...approvals.jobs, ...notifications.jobs, ...alerts.jobs, ...events.jobs, ...ingestion.jobs, ...reports.jobs, ...(options.extraJobs?.(f) ?? [])];
  const redisAt = redisTarget(f.config);
  const onRun = options.scheduler?.onRun;
  const scheduler = createScheduler({
    ...options.scheduler,
    onRun: (job, slot, outcome, durationMs) => {
      observability.metrics.recordSchedulerRun(job, outcome, durationMs);
      onRun?.(job, slot, outcome, durationMs);
    },
    jobs,
    db: f.db,
    logger: f.logger,
    redis: redisAt ? { target: redisAt, keyPrefix: f.config.redisKeyPrefix } : null,
    enabled: f.config.schedulerEnabled,
  });
  const portability = createPortability({
    db: f.db,
    audit: auditLog,
    bus: f.bus,
    assignments: counters.assignments,
    evidence: counters.evidence,
    counters: counters.customerWipe,
    positiveOutcomes: decisions.positiveOutcomes,
    otherCustomerData: [ingestion.customerRows, notifications.customerMessages],
    streamEntries: events.streamEntries,
    configChanged: decisions.configChanged,
    afterImport: { schemas: ingestion.importedSchema },
  });
  const customers = createCustomers({
    db: f.db,
    logger: f.logger,
    decisions: decisions.readModel.customerHistory,
    clvChanged: (tenantId, customerIds) => decisions.customersChanged(tenantId, customerIds),
    deliveries: webhooks.deliveryEvents,
    events: events.history,
    journeys: events.journeys,
    segments: (tenantId) => catalog.segmentDefinitions(tenantId),
  });
  const scim = createScim({ db: f.db, audit: auditLog, bus: f.bus, authenticator, rateLimits, logger: f.logger, bodyLimitBytes: f.config.defaultBodyLimitBytes });
  const sso = createSso({
    db: f.db,
    redis: f.redis,
    identityStore,
    identity,
    audit: auditLog,
    cipher: f.settingsCipher,
    sessions: sessionChecks.issuer,
    rateLimits,
    outbound: f.config.outbound,
    authOidc: f.config.authOidc,
    publicUrl: f.config.publicUrl,
    logger: f.logger,
  });
  const sessions = createSessions({
    db: f.db,
    bus: f.bus,
    logger: f.logger,
    checks: sessionChecks,
    authenticator,
    identityStore,
    dispatcher: notifications.dispatcher,
    audit: auditLog,
    initializeTenant: catalog.seedTenant,
    rateLimits,
    publicUrl: f.config.publicUrl,
    registrationEnabled: f.config.registrationEnabled,
    passwordSignInPolicy: sso.passwordSignInPolicy,
    now,
  });
  const registrations: ServiceRegistration[] = [
    { service: ApiKeyService, impl: identity as never },
    { service: OAuthService, impl: identity as never },
    { service: AuditServiceDesc, impl: audit as never },
    { service: CronServiceDesc, impl: new CronService(scheduler) as never },
    ...catalog.services,
    ...decisions.services,
    ...models.services,
    ...notifications.services,
    ...experiments.services,
    ...explanations.services,
    ...webhooks.services,
    ...observability.services,
    ...content.services,
    ...customers.services,
    ...portability.services,
    ...approvals.services,
    ...events.services,
    ...alerts.services,
    ...sso.services,
    ...ingestion.services,
    ...reports.services,
  ];
  const interrupt = async (graceMs: number): Promise<void> => {
    notifications.dispatcher.close();
    await ingestion.stop(graceMs);
  };
  const mcp = createMcp({ registrations, authenticator, rateLimits, preview: decisions.preview, logger: f.logger, bodyLimitBytes: f.config.defaultBodyLimitBytes });
  return {
    identityStore,
    identity,
    audit,
    catalog,
    decisions,
    modelPromoter: models.promoter,
    notifications,
    dispatcher: notifications.dispatcher,
    experiments,
    webhooks,
    observability,
    approvals,
    events,
    authenticator,
    rateLimits,
    sso,
    sessions,
    registrations,
    httpRoutes: [...sessions.routes, scim.route, mcp.route, ...sso.httpRoutes, ...reports.httpRoutes, ...openApiRoutes(), ...createConsoleRoutes()],
    jobs,
    scheduler,
    listen: async () => {
      await memoryCounters?.persistence.start();
      await authenticator.listen(f.bus);
      await decisions.listen();
      await notifications.listen();
    },
    interrupt,
    close: async (graceMs = f.config.shutdownGraceMs) => {
      const deadline = Date.now() + graceMs;
      // A caller that closed without interrupting (the CLI) still ends its deliveries and runs first;
      // after stop() interrupted, this finds nothing left to interrupt.
      await interrupt(graceMs);
      // An attempt still under way after the grace is not waited for: its row's lease runs out and
      // the outbox's sweep of another process, or of the next start, sends it.
      const left = Math.max(0, deadline - Date.now());
      const sent = await settledWithin(Promise.all([events.settled(), sessions.settled()]), left);
      if (!sent) f.logger.warn({ graceMs }, "outbound deliveries still under way at stop are left to the redelivery sweep");
      await decisions.close();
      // After the decisions' writers settled (a failed write gives its reservation back).
      await memoryCounters?.persistence.stop();
      await pool.close();
      await observability.close();
    },
  };
}

export interface RunningService {
  httpPort: number;
  grpcPort: number;
  /** null when METRICS_PORT is unset, and in a service process under the supervisor (it serves them). */
  metricsPort: number | null;
  foundation: Foundation;
  services: Services;
  stop(): Promise<void>;
}

/** How often gRPC health re-checks the database and Redis. */
const HEALTH_POLL_MS = 2_000;
/** How often a drain closes the keep-alive connections that have turned idle. */
const IDLE_CLOSE_MS = 50;

/** The one wiring point: config → pools → stores → services → servers. */
export async function startService(config: Config, logger = createLogger(config.logLevel), options: ServiceOptions = {}): Promise<RunningService> {
  const f = await openFoundation(config, logger);
  const services = createServices(f, options);
  const { authenticator, rateLimits } = services;
  await services.listen();
  // Before listening, so that the key is on screen when the service answers.
  if (f.embeddedDatabaseCreated) await createFirstTenant(services.identity);

  const gateway = new Gateway(
    services.registrations,
    authenticator,
    services.rateLimits,
    config.defaultBodyLimitBytes,
    logger,
    services.observability.observer,
    new CronAuthenticator(config.cronSecret),
  );

  const health = async () => {
    const checks: Record<string, "ok" | "down"> = {};
    checks.database = await f.db.query("SELECT 1").then(() => "ok" as const, () => "down" as const);
    if (f.redis) checks.redis = await f.redis.ping().then(() => "ok" as const, () => "down" as const);
    return checks;
  };
  const http = createHttpServer(gateway, health, [], services.httpRoutes);
  http.listen(config.port, config.host);
  await once(http, "listening");
  const grpc = createGrpcServer(gateway);
  const grpcPort = await bindGrpc(grpc.server, config.host, config.grpcPort);
  // Declared before the first await that the health poll below can interleave with.
  let stopping: Promise<void> | null = null;
  // gRPC health follows the same checks as /healthz, polled: the standard service holds a status.
  const healthPoll = setInterval(() => {
    void health().then((checks) => {
      if (!stopping) grpc.health.setStatus("", Object.values(checks).every((c) => c === "ok") ? "SERVING" : "NOT_SERVING");
    });
  }, HEALTH_POLL_MS);
  healthPoll.unref();
  const httpPort = (http.address() as AddressInfo).port;
  const metricsServer = await serveMetrics(config, services.observability, logger);
  // After listening: a slot that fires now finds the process ready to serve what its job changes.
  await services.scheduler.start();
  logger.info({ httpPort, grpcPort, pid: process.pid }, "decisioning service listening");

  return {
    httpPort,
    grpcPort,
    metricsPort: metricsServer?.port ?? null,
    foundation: f,
    services,
    stop() {
      // Drain: stop accepting, let in-flight requests finish (bounded), then close the pools.
      stopping ??= (async () => {
        // One grace for the whole stop, each step waiting at most for what is left of it: a
        // supervisor that kills after its own period (Kubernetes: 30 s) sees SHUTDOWN_GRACE_MS hold.
        const deadline = Date.now() + config.shutdownGraceMs;
        const left = () => Math.max(0, deadline - Date.now());
        clearInterval(healthPoll);
        grpc.health.setStatus("", "NOT_SERVING");
        // Before the scheduler and the servers wait for what is in flight: a delivery waiting on its
        // backoff, or an ingestion run, would hold them. Interrupted, each records its end while the
        // pools are open (the delivery goes to the outbox's sweep), and its caller gets that answer.
        await services.interrupt(left());
        // Then the scheduler, so that no new slot starts while the servers drain; running attempts finish within the grace.
        await services.scheduler.stop(left());
        const grace = setTimeout(() => {
          http.closeAllConnections();
          grpc.server.forceShutdown();
        }, left());
        // A keep-alive connection whose last request ends during the drain turns idle without
        // closing, and close() waits for every connection: closing the idle ones until the drain
        // ends lets it end with its last answer instead of at the grace.
        const idle = setInterval(() => http.closeIdleConnections(), IDLE_CLOSE_MS);
        await Promise.all([
          new Promise<void>((res) => {
            http.close(() => res());
            http.closeIdleConnections();
          }).finally(() => clearInterval(idle)),
          new Promise<void>((res) => grpc.server.tryShutdown(() => res())),
        ]);
        clearTimeout(grace);
        await metricsServer?.close();
        await services.close(left());
        await f.close();
      })();
      return stopping;
    },
  };
}

/** This process's metrics port, or, under the supervisor, its share of the supervisor's. */
async function serveMetrics(config: Config, observability: Observability, logger: Logger): Promise<MetricsServer | null> {
  const { metrics } = observability;
  if (cluster.isWorker) {
    shareMetricsWithSupervisor(metrics.registry);
    return null;
  }
  if (config.metricsPort === null) return null;
  return startMetricsServer({
    host: config.host,
    port: config.metricsPort,
    token: config.metricsToken,
    logger,
    render: async () => ({ body: await metrics.render(), contentType: metrics.contentType }),
  });
}

/** A database that cannot be reached at all is the operator's to fix; anything else keeps its stack. */
function unreachableDatabase(err: unknown, config: Config): unknown {
  if (!(err instanceof ConnectionError)) return err;
  const what = config.databaseUrl ? "PostgreSQL at DATABASE_URL" : "the embedded PostgreSQL";
  return new StartupError(`${what} is unreachable: ${err.message}`, { cause: err });
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  if (cluster.isPrimary && config.workers > 1) {
    // Processes can share only what lives outside them: the embedded database and the in-process
    // stand-ins for Redis (counters, invalidation) belong to one process.
    if (config.databaseUrl !== null && redisTarget(config) !== null) {
      if (config.metricsPort !== null) {
        await startClusterMetricsServer({ host: config.host, port: config.metricsPort, token: config.metricsToken, logger });
      }
      return superviseWorkers(config.workers, logger);
    }
    logger.warn({ workers: config.workers }, "WORKERS needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES); running one process");
  }
  // Before the service opens its pools, so that PostgreSQL and Redis calls are traced from the first request.
  const tracing = await startTracing(config.otlpTracesEndpoint);
  if (tracing) logger.info("OpenTelemetry tracing on: spans are exported over OTLP");
  const service = await startService(config, logger);
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    // `on`, not `once`: a second signal (a terminal's Ctrl-C reaches a supervisor's processes too)
    // must not kill a process that is draining.
    process.on(signal, () => {
      logger.info({ signal }, "draining");
      service.stop().then(
        async () => {
          // The last spans are exported before the process goes; an exporter failure does not fail the drain.
          await tracing?.shutdown().catch(() => undefined);
          process.exit(0);
        },
        (err) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err instanceof StartupError ? `error: ${err.message}` : err);
    process.exit(1);
  });
}
