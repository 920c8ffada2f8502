import { randomBytes } from "node:crypto";
import { loadConfig, type Config } from "../../src/config.js";
import { createLogger, type Logger } from "../../src/platform/logger.js";
import { startService, type RunningService, type ServiceOptions } from "../../src/main.js";
import type { IdentityService } from "../../src/identity/identity-service.js";
import type { RoleName } from "../../src/platform/context.js";
import { createTestDatabase, requireEnv } from "./database.js";

export const TEST_PEPPER = "test-pepper-0123456789abcdef0123456789abcdef";
export const TEST_JWT_SECRET = "test-jwt-secret-0123456789abcdef0123456789abcdef";
export const TEST_INTERNAL_KEY = "internal-0123456789abcdef0123456789abcdef";

export interface TestService {
  running: RunningService;
  config: Config;
  baseUrl: string;
  grpcAddress: string;
  identity: IdentityService;
  /** A tenant with an admin user and that user's control-plane key. */
  createTenant(name?: string): Promise<{ tenantId: string; userId: string; apiKey: string }>;
  createUser(tenantId: string, role: RoleName): Promise<{ userId: string; apiKey: string }>;
  /** Rows of a bound query on this service's database, for asserting what was (not) written. */
  sql(query: string, bind?: unknown[]): Promise<any[]>;
  stop(): Promise<void>;
}

/**
 * The whole service on real Postgres (a database of this file's own) and Redis (a key prefix of its
 * own). `logger` lets a test read what the service logs; `options` registers extra scheduled jobs.
 */
export async function startTestService(
  overrides: Partial<Config> = {},
  databaseUrl?: string,
  logger?: Logger,
  options: ServiceOptions = {},
): Promise<TestService> {
  const config: Config = {
    ...loadConfig({}),
    host: "127.0.0.1",
    port: 0,
    grpcPort: 0,
    databaseUrl: databaseUrl ?? (await createTestDatabase()),
    redisUrl: requireEnv("TEST_REDIS_URL"),
    redisKeyPrefix: `test:${randomBytes(6).toString("hex")}:`,
    apiKeyPepper: TEST_PEPPER,
    jwtSigningSecret: TEST_JWT_SECRET,
    internalApiKey: TEST_INTERNAL_KEY,
    logLevel: process.env.TEST_LOG_LEVEL ?? "silent",
    shutdownGraceMs: 2000,
    // Off unless a test is about the scheduler: a scheduled run would change data under other tests,
    // and BullMQ's connections can outlive a stop after a Redis outage, keeping the test process alive.
    schedulerEnabled: false,
    ...overrides,
  };
  const running = await startService(config, logger ?? createLogger(config.logLevel), options);
  const identity = running.services.identity;
  let n = 0;
  return {
    running,
    config,
    baseUrl: `http://127.0.0.1:${running.httpPort}`,
    sql: async (query, bind = []) => (await running.foundation.db.query(query, { bind }))[0] as any[],
    grpcAddress: `127.0.0.1:${running.grpcPort}`,
    identity,
    createTenant: (name = `tenant-${++n}`) => identity.createTenant(name),
    createUser: (tenantId, role) => identity.createUser(tenantId, `${role}-${++n}-${randomBytes(3).toString("hex")}@example.com`, role),
    stop: () => running.stop(),
  };
}
