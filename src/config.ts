/** Reads the environment once, validates it, and fails with one clear line. */
export interface RateLimitOverride {
  limit: number;
  windowSeconds: number;
}

export interface Config {
  host: string;
  port: number;
  grpcPort: number;
  /** null: start the embedded Postgres under dataDir (single-node default). */
  databaseUrl: string | null;
  /** null: in-process stand-ins for the Redis-backed features (single-node default). */
  redisUrl: string | null;
  /** Prepended to every Redis key and channel, so deployments (and test files) can share a Redis. */
  redisKeyPrefix: string;
  dataDir: string;
  /** As root: where the embedded PostgreSQL goes when the postgres user cannot reach dataDir or the checkout. */
  embeddedPgDir: string;
  /** Raw environment values; secrets.ts decides whether they are usable. */
  apiKeyPepper: string | null;
  jwtSigningSecret: string | null;
  /** Internal server key (spec 5.1 rule 4), an infrastructure credential. */
  internalApiKey: string | null;
  /** Per-bucket replacements of the limits declared in proto (RATE_LIMITS, JSON). */
  rateLimits: Record<string, RateLimitOverride>;
  defaultBodyLimitBytes: number;
  logLevel: string;
  shutdownGraceMs: number;
  /** Lifetime decisions per workspace (5,000 on the hosted shared environment); null for none. */
  decisionQuota: number | null;
  /** Scoring tasks of at least this many tree walks (trees × candidates) go to the worker pool. */
  scoringPoolMinTreeWalks: number;
  /** Service processes sharing the ports (node:cluster); 1 runs the service in this process. */
  workers: number;
  /** How old adaptive evidence may be before Recommend refreshes it from Redis; 0 reads it every time. */
  evidenceMaxAgeMs: number;
  /** SCHEDULER=off: no in-process scheduling, for operators who drive the cron routes from outside. */
  schedulerEnabled: boolean;
  /** Shared secret of the cron routes (spec 5.6); null leaves them answering 401. */
  cronSecret: string | null;
}

export class ConfigError extends Error {}

/**
 * Measured by `npm run bench` (docs/performance.md): once compiled models are cached per snapshot,
 * scoring inline beat the pool at every size measured (up to 80,000 tree walks), because a task
 * must carry its model to the worker by structured clone. The pool is kept for larger ensembles.
 */
export const DEFAULT_POOL_MIN_TREE_WALKS = 100_000;

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name} must be a port number, got "${raw}"`);
  return n;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? "").trim().toLowerCase();
  if (raw === "") return fallback;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new ConfigError(`${name} must be on or off, got "${env[name]}"`);
}

function optional(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = env[name];
  return v === undefined || v === "" ? null : v;
}

/**
 * Rate-limit overrides keyed by bucket, as the deployment (RATE_LIMITS) and the CLI's
 * `tenant set-limits` give them; `source` names the input in the error.
 */
export function parseRateLimits(raw: string, source = "RATE_LIMITS"): Record<string, RateLimitOverride> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${source} must be JSON like {"default":{"limit":1000,"windowSeconds":60}}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`${source} must be a JSON object keyed by bucket name`);
  }
  const out: Record<string, RateLimitOverride> = {};
  for (const [bucket, v] of Object.entries(parsed as Record<string, unknown>)) {
    const o = v as Partial<RateLimitOverride> | null;
    if (!o || !Number.isInteger(o.limit) || !Number.isInteger(o.windowSeconds) || o.limit! < 1 || o.windowSeconds! < 1) {
      throw new ConfigError(`${source}.${bucket} needs positive integers limit and windowSeconds`);
    }
    out[bucket] = { limit: o.limit!, windowSeconds: o.windowSeconds! };
  }
  return out;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST || "0.0.0.0",
    port: port(env, "PORT", 8080),
    grpcPort: port(env, "GRPC_PORT", 50051),
    databaseUrl: optional(env, "DATABASE_URL"),
    redisUrl: optional(env, "REDIS_URL"),
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? "",
    dataDir: env.DATA_DIR || ".data",
    embeddedPgDir: env.EMBEDDED_PG_DIR || "/var/lib/decisioning-service",
    apiKeyPepper: optional(env, "API_KEY_PEPPER"),
    jwtSigningSecret: optional(env, "JWT_SIGNING_SECRET") ?? optional(env, "SESSION_SECRET"),
    internalApiKey: optional(env, "API_KEY"),
    rateLimits: parseRateLimits(optional(env, "RATE_LIMITS") ?? "{}"),
    defaultBodyLimitBytes: positiveInt(env, "DEFAULT_BODY_LIMIT_BYTES", 1024 * 1024),
    logLevel: env.LOG_LEVEL || "info",
    shutdownGraceMs: positiveInt(env, "SHUTDOWN_GRACE_MS", 10_000),
    decisionQuota: optional(env, "DECISION_QUOTA") === null ? null : positiveInt(env, "DECISION_QUOTA", 1),
    scoringPoolMinTreeWalks: positiveInt(env, "SCORING_POOL_MIN_TREE_WALKS", DEFAULT_POOL_MIN_TREE_WALKS),
    workers: positiveInt(env, "WORKERS", 1),
    evidenceMaxAgeMs: env.EVIDENCE_MAX_AGE_MS === "0" ? 0 : positiveInt(env, "EVIDENCE_MAX_AGE_MS", 1000),
    schedulerEnabled: onOff(env, "SCHEDULER", true),
    cronSecret: optional(env, "CRON_SECRET"),
  };
}
