import type { Sequelize } from "sequelize";
import { SystemHealthService as SystemHealthServiceDesc } from "../../gen/decisioning/v1/observability_pb.js";
import { dbPoolState, type Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { RedisClient } from "../platform/redis.js";
import type { RequestObserver } from "../platform/request-observer.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { HealthAlertStore } from "./health-alert-store.js";
import { Metrics } from "./metrics.js";
import { createRedisRequestStats } from "./redis-request-stats.js";
import { createMemoryRequestStats, type RecordingRequestStats } from "./request-stats.js";
import { SystemHealthService } from "./system-health-service.js";
import type { HealthAlerts } from "./operational-signals.js";

export interface ObservabilityOptions {
  db: Sequelize;
  /** null: request statistics stay in this process (the single-node default). */
  redis: RedisClient | null;
  logger: Logger;
}

export interface Observability {
  metrics: Metrics;
  /** Shared by every process (Redis), for the latency_p99 and http_5xx_count alert metrics. */
  requestStats: RecordingRequestStats;
  healthAlerts: HealthAlerts;
  /** What the gateway tells about every answered call. */
  observer: RequestObserver;
  services: ServiceRegistration[];
  /** A workspace reset's share: the tenant's health alerts. */
  wipeTenant(t: Transaction, tenantId: string): Promise<void>;
  /** Flushes the request statistics still buffered. */
  close(): Promise<void>;
}

/** Metrics, request statistics and system health: built once at start-up. */
export function createObservability(o: ObservabilityOptions): Observability {
  const metrics = new Metrics();
  metrics.watch({ dbPool: () => dbPoolState(o.db) });
  if (o.redis) metrics.watchRedis(o.redis);
  const requestStats = o.redis ? createRedisRequestStats(o.redis, o.logger) : createMemoryRequestStats();
  const healthAlertStore = new HealthAlertStore(o.db);
  const systemHealth = new SystemHealthService(healthAlertStore, o.logger);
  return {
    metrics,
    requestStats,
    healthAlerts: systemHealth,
    observer: {
      observe(door, method, status, durationMs, tenantId) {
        metrics.observe(door, method, status, durationMs);
        // Calls refused before authentication belong to no tenant.
        if (tenantId) requestStats.record(tenantId, durationMs, status);
      },
    },
    services: [{ service: SystemHealthServiceDesc, impl: { listHealthAlerts: (ctx, req) => systemHealth.listHealthAlerts(ctx, req) } }],
    wipeTenant: (t, tenantId) => healthAlertStore.deleteAll(t, tenantId),
    close: () => requestStats.close(),
  };
}
