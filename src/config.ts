/** Reads the environment once, validates it, and fails with one clear line. */
import { parseSettingsKeys, type SettingsKey } from "./platform/settings-cipher.js";
import { DEFAULT_MIN_SCORED_DECISIONS } from "./core/registry-moves.js";
import type { RedisNode, RedisTarget } from "./platform/redis.js";

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
  /** null (and no cluster): in-process stand-ins for the Redis-backed features (single-node default). */
  redisUrl: string | null;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's start-up nodes, used instead of REDIS_URL (docs/redis-cluster.md). */
  redisClusterNodes: RedisNode[] | null;
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
  /** Scoring worker threads per service process; null for one per core but one. */
  scoringPoolThreads: number | null;
  /** A pooled scoring task not answered within this many ms is scored inline instead. */
  scoringPoolTimeoutMs: number;
  /** Service processes sharing the ports (node:cluster); 1 runs the service in this process. */
  workers: number;
  /** How old adaptive evidence may be before Recommend refreshes it from Redis; 0 reads it every time. */
  evidenceMaxAgeMs: number;
  /** SCHEDULER=off: no in-process scheduling, for operators who drive the cron routes from outside. */
  schedulerEnabled: boolean;
  /** Shared secret of the cron routes (spec 5.6); null leaves them answering 401. */
  cronSecret: string | null;
  /** Scored decisions a model needs before it may replace a champion (docs/models.md); 0 turns that rule off. */
  modelPromotionMinDecisions: number;
  /** Pending approval requests older than this many hours expire (spec 3.5, 8). */
  approvalMaxAgeHours: number;
  /** The tenant whose admins manage platform settings; null: the tenant created with --platform-owner. */
  platformOwnerTenantId: string | null;
  /** Keys for encrypted settings and provider secrets, the current one first; empty: none configured. */
  settingsKeys: SettingsKey[];
  /** Outbound notifications: how they retry, and whether private and loopback addresses may be reached. */
  outbound: OutboundConfig;
  /** The OpenAI-compatible chat-completions endpoint that writes narratives; null: the deterministic writer. */
  llm: LlmConfig | null;
  /** Approximate cap of each tenant's event stream (XADD MAXLEN ~), docs/events.md. */
  eventStreamMaxLen: number;
  /** Inbound events older than this many days are deleted by the daily events-retention job. */
  eventRetentionDays: number;
  /** Port of GET /metrics (Prometheus); null keeps it off (docs/observability.md). */
  metricsPort: number | null;
  /** Bearer token the metrics port requires; null: open to whoever reaches the port. */
  metricsToken: string | null;
  /** Inbound delivery webhooks (spec 4.18); each unset secret makes its route refuse every request. */
  webhooks: WebhookSecrets;
  /** INGESTION_STS_ENDPOINT: the STS that iam_role connectors assume roles at; null for AWS's (docs/ingestion.md). */
  ingestionStsEndpoint: string | null;
  /** RUN_LEASE_MS: a run not renewed for this long is finished as failed by the sweep (docs/ingestion.md). */
  runLeaseMs: number;
  /** PUBLIC_URL (spec 5.5): where people reach the service; links in mails point here. No trailing slash. */
  publicUrl: string;
  /** REGISTRATION=off turns self-registration off (docs/sessions.md); the CLI still creates tenants. */
  registrationEnabled: boolean;
  /** SESSION_COOKIE_SECURE resolved: whether the session cookie carries `Secure`. */
  sessionCookieSecure: boolean;
  /** Where OpenTelemetry traces go (OTLP); null keeps tracing off, with no SDK loaded (docs/observability.md). */
  otlpTracesEndpoint: string | null;
  /** The deployment's own identity provider (AUTH_OIDC_*, docs/sso.md); null: that sign-in is off. */
  authOidc: AuthOidcConfig | null;
}

export interface AuthOidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** The three infrastructure secrets of spec 4.18; null when not set (that route refuses every request). */
export interface WebhookSecrets {
  messagingVerifyToken: string | null;
  messagingAppSecret: string | null;
  deliverySigningSecret: string | null;
}

export interface OutboundConfig {
  /** Loopback, private, link-local and similar addresses are refused unless this is true. */
  allowPrivate: boolean;
  /** Attempts per destination, the first included. */
  maxAttempts: number;
  /** Backoff before the second attempt; it doubles per attempt up to backoffMaxMs. */
  backoffMs: number;
  backoffMaxMs: number;
  /** Per attempt: connect, send and answer. */
  timeoutMs: number;
}

export interface LlmConfig {
  /** LLM_BASE_URL, e.g. https://api.openai.com/v1; requests go to `<baseUrl>/chat/completions`. */
  baseUrl: string;
  model: string;
  /** Sent as a bearer token and nowhere else (never logged or returned); null for endpoints without one. */
  apiKey: string | null;
}

export class ConfigError extends Error {}

/**
 * Measured by `npm run bench` (bench/crossover.ts, docs/performance.md): since workers keep models
 * and offers by reference, a pooled task costs the event loop about 0.1 ms whatever its size, and
 * the pool saves the loop from 2,000 tree walks at 20 candidates and 5,000 at 200 candidates.
 */
export const DEFAULT_POOL_MIN_TREE_WALKS = 5_000;

/**
 * A pooled task not answered within this is scored inline. Long enough that only a stuck worker or
 * a machine far past its capacity reaches it: scoring again inline is then extra work.
 */
export const DEFAULT_POOL_TIMEOUT_MS = 500;

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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function settingsKeys(env: NodeJS.ProcessEnv): SettingsKey[] {
  try {
    return parseSettingsKeys(optional(env, "SETTINGS_ENCRYPTION_KEYS"), optional(env, "SETTINGS_ENCRYPTION_KEY"));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function platformOwner(env: NodeJS.ProcessEnv): string | null {
  const id = optional(env, "PLATFORM_OWNER_TENANT_ID");
  if (id !== null && !UUID.test(id)) throw new ConfigError(`PLATFORM_OWNER_TENANT_ID must be a tenant id (a UUID), got "${id}"`);
  return id;
}

function outbound(env: NodeJS.ProcessEnv): OutboundConfig {
  const allow = optional(env, "OUTBOUND_ALLOW_PRIVATE");
  if (allow !== null && allow !== "true" && allow !== "false") throw new ConfigError(`OUTBOUND_ALLOW_PRIVATE must be true or false, got "${allow}"`);
  return {
    allowPrivate: allow === "true",
    maxAttempts: positiveInt(env, "OUTBOUND_MAX_ATTEMPTS", 5),
    backoffMs: positiveInt(env, "OUTBOUND_BACKOFF_MS", 1000),
    backoffMaxMs: positiveInt(env, "OUTBOUND_BACKOFF_MAX_MS", 60_000),
    timeoutMs: positiveInt(env, "OUTBOUND_TIMEOUT_MS", 10_000),
  };
}

/** An optional http(s) URL setting. */
function optionalHttpUrl(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = optional(env, name);
  return value === null ? null : httpUrl(name, value);
}

/** LLM_BASE_URL and LLM_MODEL together, or neither; LLM_API_KEY optional (a local endpoint needs none). */
function llmConfig(env: NodeJS.ProcessEnv): LlmConfig | null {
  const baseUrl = optional(env, "LLM_BASE_URL");
  const model = optional(env, "LLM_MODEL");
  if (baseUrl === null && model === null) return null;
  if (baseUrl === null || model === null) throw new ConfigError("LLM_BASE_URL and LLM_MODEL must be set together");
  return { baseUrl: httpUrl("LLM_BASE_URL", baseUrl), model, apiKey: optional(env, "LLM_API_KEY") };
}

/** An http or https URL named `name`, without trailing slashes (paths are appended to it). */
function httpUrl(name: string, raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // reported below
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") throw new ConfigError(`${name} must be an http or https URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

/** PUBLIC_URL; default `http://localhost:<PORT>` for a first run on one machine. */
function publicUrl(env: NodeJS.ProcessEnv): string {
  return httpUrl("PUBLIC_URL", optional(env, "PUBLIC_URL") ?? `http://localhost:${port(env, "PORT", 8080)}`);
}

/**
 * SESSION_COOKIE_SECURE=auto|true|false. `auto` (the default) sets `Secure` unless PUBLIC_URL is plain
 * HTTP on loopback (localhost, 127.0.0.1, [::1]), where browsers would otherwise never send the cookie back.
 */
export function sessionCookieSecure(env: NodeJS.ProcessEnv, publicUrlValue: string): boolean {
  const raw = (optional(env, "SESSION_COOKIE_SECURE") ?? "auto").toLowerCase();
  if (raw === "true") return true;
  if (raw === "false") return false;
  if (raw !== "auto") throw new ConfigError(`SESSION_COOKIE_SECURE must be auto, true or false, got "${env.SESSION_COOKIE_SECURE}"`);
  const url = new URL(publicUrlValue);
  return !(url.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname));
}

/**
 * The standard OTLP variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT;
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn tracing off. The SDK reads the rest.
 */
function otlpTracesEndpoint(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true" || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return null;
  const name = optional(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== null ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const endpoint = optional(env, name);
  if (endpoint === null) return null;
  if (!URL.canParse(endpoint) || !["http:", "https:"].includes(new URL(endpoint).protocol)) {
    throw new ConfigError(`${name} must be an http or https URL, got "${endpoint}"`);
  }
  return endpoint;
}

/** `host:port,host:port,...`; an IPv6 host in brackets. */
function redisClusterNodes(env: NodeJS.ProcessEnv): RedisNode[] | null {
  const raw = optional(env, "REDIS_CLUSTER_NODES");
  if (raw === null) return null;
  return raw.split(",").map((entry) => {
    const text = entry.trim();
    const colon = text.lastIndexOf(":");
    const host = text.slice(0, Math.max(colon, 0)).replace(/^\[(.*)\]$/, "$1");
    const port = Number(text.slice(colon + 1));
    if (colon < 1 || !host || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ConfigError(`REDIS_CLUSTER_NODES must be host:port pairs separated by commas, got "${text}"`);
    }
    return { host, port };
  });
}

/**
 * REDIS_URL or REDIS_CLUSTER_NODES, never both: a deployment that set both would not say which
 * Redis holds its counters. On a cluster the key prefix comes before the tenant's hash tag, so a
 * brace in it would become the tag and scatter a tenant's keys over slots.
 */
function redisSettings(env: NodeJS.ProcessEnv): Pick<Config, "redisUrl" | "redisClusterNodes" | "redisKeyPrefix"> {
  const redisUrl = optional(env, "REDIS_URL");
  const nodes = redisClusterNodes(env);
  const redisKeyPrefix = env.REDIS_KEY_PREFIX ?? "";
  if (redisUrl !== null && nodes !== null) throw new ConfigError("set REDIS_URL or REDIS_CLUSTER_NODES, not both");
  if (nodes !== null && /[{}]/.test(redisKeyPrefix)) {
    throw new ConfigError(`REDIS_KEY_PREFIX must not contain { or } with REDIS_CLUSTER_NODES (they would replace the tenant's hash tag), got "${redisKeyPrefix}"`);
  }
  return { redisUrl, redisClusterNodes: nodes, redisKeyPrefix };
}

/** Where this deployment's Redis is, or null for the in-process stand-ins. */
export function redisTarget(config: Pick<Config, "redisUrl" | "redisClusterNodes">): RedisTarget | null {
  return config.redisClusterNodes ?? config.redisUrl;
}

/** All three AUTH_OIDC_* or none; the issuer https unless OUTBOUND_ALLOW_PRIVATE=true; PUBLIC_URL for the redirect URI. */
function authOidc(env: NodeJS.ProcessEnv, allowPrivate: boolean, publicUrlValue: string | null): AuthOidcConfig | null {
  const issuer = optional(env, "AUTH_OIDC_ISSUER");
  const clientId = optional(env, "AUTH_OIDC_CLIENT_ID");
  const clientSecret = optional(env, "AUTH_OIDC_CLIENT_SECRET");
  if (issuer === null && clientId === null && clientSecret === null) return null;
  if (issuer === null || clientId === null || clientSecret === null) {
    throw new ConfigError("AUTH_OIDC_ISSUER, AUTH_OIDC_CLIENT_ID and AUTH_OIDC_CLIENT_SECRET must be set together");
  }
  let url: URL | null = null;
  try {
    url = new URL(issuer);
  } catch {
    // reported below
  }
  if (!url || !(url.protocol === "https:" || (url.protocol === "http:" && allowPrivate))) {
    throw new ConfigError(`AUTH_OIDC_ISSUER must be an https URL (http only with OUTBOUND_ALLOW_PRIVATE=true), got "${issuer}"`);
  }
  if (publicUrlValue === null) throw new ConfigError("AUTH_OIDC_ISSUER needs PUBLIC_URL: the identity provider redirects to <PUBLIC_URL>/api/auth/callback/oidc");
  return { issuer: issuer.replace(/\/+$/, ""), clientId, clientSecret };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const publicUrlValue = publicUrl(env);
  return {
    host: env.HOST || "0.0.0.0",
    port: port(env, "PORT", 8080),
    grpcPort: port(env, "GRPC_PORT", 50051),
    databaseUrl: optional(env, "DATABASE_URL"),
    ...redisSettings(env),
    dataDir: env.DATA_DIR || ".data",
    embeddedPgDir: env.EMBEDDED_PG_DIR || "/var/lib/decisioning-service",
    apiKeyPepper: optional(env, "API_KEY_PEPPER"),
    jwtSigningSecret: optional(env, "JWT_SIGNING_SECRET") ?? optional(env, "SESSION_SECRET"),
    internalApiKey: optional(env, "API_KEY"),
    rateLimits: parseRateLimits(optional(env, "RATE_LIMITS") ?? "{}"),
    // Spec 7's 413 "over 2 MB": 2,000,000 bytes, as the offers routes declare (catalog.proto; docs/limits.md).
    defaultBodyLimitBytes: positiveInt(env, "DEFAULT_BODY_LIMIT_BYTES", 2_000_000),
    logLevel: env.LOG_LEVEL || "info",
    shutdownGraceMs: positiveInt(env, "SHUTDOWN_GRACE_MS", 10_000),
    decisionQuota: optional(env, "DECISION_QUOTA") === null ? null : positiveInt(env, "DECISION_QUOTA", 1),
    scoringPoolMinTreeWalks: positiveInt(env, "SCORING_POOL_MIN_TREE_WALKS", DEFAULT_POOL_MIN_TREE_WALKS),
    scoringPoolThreads: optional(env, "SCORING_POOL_THREADS") === null ? null : positiveInt(env, "SCORING_POOL_THREADS", 1),
    scoringPoolTimeoutMs: positiveInt(env, "SCORING_POOL_TIMEOUT_MS", DEFAULT_POOL_TIMEOUT_MS),
    workers: positiveInt(env, "WORKERS", 1),
    evidenceMaxAgeMs: env.EVIDENCE_MAX_AGE_MS === "0" ? 0 : positiveInt(env, "EVIDENCE_MAX_AGE_MS", 1000),
    schedulerEnabled: onOff(env, "SCHEDULER", true),
    cronSecret: optional(env, "CRON_SECRET"),
    modelPromotionMinDecisions:
      env.MODEL_PROMOTION_MIN_DECISIONS === "0" ? 0 : positiveInt(env, "MODEL_PROMOTION_MIN_DECISIONS", DEFAULT_MIN_SCORED_DECISIONS),
    approvalMaxAgeHours: positiveInt(env, "APPROVAL_MAX_AGE_HOURS", 168),
    platformOwnerTenantId: platformOwner(env),
    settingsKeys: settingsKeys(env),
    outbound: outbound(env),
    llm: llmConfig(env),
    webhooks: {
      messagingVerifyToken: optional(env, "MESSAGING_WEBHOOK_VERIFY_TOKEN"),
      messagingAppSecret: optional(env, "MESSAGING_APP_SECRET"),
      deliverySigningSecret: optional(env, "WEBHOOK_SIGNING_SECRET"),
    },
    metricsPort: optional(env, "METRICS_PORT") === null ? null : port(env, "METRICS_PORT", 0),
    metricsToken: optional(env, "METRICS_TOKEN"),
    eventStreamMaxLen: positiveInt(env, "EVENT_STREAM_MAXLEN", 10_000),
    eventRetentionDays: positiveInt(env, "EVENT_RETENTION_DAYS", 365),
    authOidc: authOidc(env, outbound(env).allowPrivate, optional(env, "PUBLIC_URL") === null ? null : publicUrlValue),
    ingestionStsEndpoint: optionalHttpUrl(env, "INGESTION_STS_ENDPOINT"),
    runLeaseMs: positiveInt(env, "RUN_LEASE_MS", 300_000),
    publicUrl: publicUrlValue,
    registrationEnabled: onOff(env, "REGISTRATION", true),
    sessionCookieSecure: sessionCookieSecure(env, publicUrlValue),
    otlpTracesEndpoint: otlpTracesEndpoint(env),
  };
}
