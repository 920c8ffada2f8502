import { spawnServer } from "./server-process.js";
import { TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "./service.js";

export interface ChildService {
  baseUrl: string;
  grpcAddress: string;
  /** Its JSON log lines so far. */
  logs: Array<{ level: number; msg: string }>;
  stop(): Promise<void>;
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
  };
}
