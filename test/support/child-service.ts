import { spawnServer } from "./server-process.js";
import { TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "./service.js";

export interface ChildService {
  baseUrl: string;
  grpcAddress: string;
  /** Its JSON log lines so far. */
  logs: Array<{ level: number; msg: string }>;
  stop(): Promise<void>;
  /** Kills it with SIGKILL, as a crash would: nothing of its own stop runs. */
  kill(): Promise<void>;
}

/**
 * A second server process on the same database and Redis (node or cluster) and prefix as `svc`, for tests across
 * processes. `entry` and `env` start another entry point or add configuration (the scheduler's
 * tests start test/support/scheduler-child.ts with its jobs).
 */
export async function startChildService(svc: TestService, options: { entry?: string; env?: Record<string, string> } = {}): Promise<ChildService> {
  const server = await spawnServer(
    {
      DATABASE_URL: svc.config.databaseUrl!,
      ...(svc.config.redisClusterNodes
        ? { REDIS_CLUSTER_NODES: svc.config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(",") }
        : { REDIS_URL: svc.config.redisUrl! }),
      REDIS_KEY_PREFIX: svc.config.redisKeyPrefix,
      API_KEY_PEPPER: TEST_PEPPER,
      JWT_SIGNING_SECRET: TEST_JWT_SECRET,
      API_KEY: TEST_INTERNAL_KEY,
      // A second process of the same deployment reads the same encrypted settings and reaches the
      // same outbound receivers: without these, a job it claims could not decrypt a provider.
      ...(svc.config.settingsKeys.length && { SETTINGS_ENCRYPTION_KEYS: svc.config.settingsKeys.map((k) => `${k.id}:${k.secret}`).join(",") }),
      OUTBOUND_ALLOW_PRIVATE: String(svc.config.outbound.allowPrivate),
      OUTBOUND_MAX_ATTEMPTS: String(svc.config.outbound.maxAttempts),
      OUTBOUND_BACKOFF_MS: String(svc.config.outbound.backoffMs),
      OUTBOUND_BACKOFF_MAX_MS: String(svc.config.outbound.backoffMaxMs),
      OUTBOUND_TIMEOUT_MS: String(svc.config.outbound.timeoutMs),
      ...options.env,
    },
    options.entry,
  );
  return {
    baseUrl: server.baseUrl,
    grpcAddress: server.grpcAddress,
    logs: server.logs,
    async stop() {
      server.child.kill("SIGTERM");
      await server.exited;
    },
    async kill() {
      server.child.kill("SIGKILL");
      await server.exited;
    },
  };
}
