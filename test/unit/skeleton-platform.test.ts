import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { safeEqual } from "../../src/platform/crypto.js";
import { httpErrorResponse, toAppError } from "../../src/transport/error-mapping.js";
import { createMemoryRateLimiter } from "../../src/platform/rate-limiter.js";
import { createSecrets } from "../../src/platform/secrets.js";
import { createLogger } from "../../src/platform/logger.js";
import { ConfigError, loadConfig, redisTarget } from "../../src/config.js";
import { Authenticator, LIVENESS_CACHE_MS } from "../../src/identity/authenticator.js";
import type { ApiKeyRow, IdentityStore, UserRow } from "../../src/identity/identity-store.js";

describe("safeEqual", () => {
  test("equal only for equal strings, and never throws on a length mismatch", () => {
    assert.equal(safeEqual("kcs_abc", "kcs_abc"), true);
    assert.equal(safeEqual("kcs_abc", "kcs_abd"), false);
    assert.equal(safeEqual("kcs_abc", "kcs_abcd"), false);
    assert.equal(safeEqual("", "x".repeat(1000)), false);
    assert.equal(safeEqual("é", "e\u0301"), false, "compared as the bytes sent, not normalized");
  });
});

describe("the in-process rate limiter (single-node default)", () => {
  test("a sliding window: the oldest hit leaving the window frees one slot", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter(() => now);
    assert.deepEqual(await limiter.hit("k", 2, 1000), { allowed: true, limit: 2, remaining: 1, retryAfterSeconds: 0 });
    now = 600;
    assert.equal((await limiter.hit("k", 2, 1000)).remaining, 0);
    now = 900;
    assert.deepEqual(await limiter.hit("k", 2, 1000), { allowed: false, limit: 2, remaining: 0, retryAfterSeconds: 1 });
    now = 1001;
    assert.equal((await limiter.hit("k", 2, 1000)).allowed, true, "the hit at 0 has left the window");
    assert.equal((await limiter.hit("k", 2, 1000)).allowed, false, "the hit at 600 has not");
  });

  test("a hit of cost n takes n slots, all or none, and waits until enough of them leave the window", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter(() => now);
    assert.equal((await limiter.hit("k", 10, 60_000, 6)).remaining, 4);
    now = 10_000;
    assert.equal((await limiter.hit("k", 10, 60_000, 3)).remaining, 1);
    now = 20_000;
    const refused = await limiter.hit("k", 10, 60_000, 5);
    assert.deepEqual(refused, { allowed: false, limit: 10, remaining: 0, retryAfterSeconds: 40 }, "the six hits at 0 must leave the window");
    assert.equal((await limiter.hit("k", 10, 60_000, 1)).remaining, 0, "a refused batch took nothing");
  });

  test("windows of keys seen once are dropped after they expire", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter(() => now);
    for (let i = 0; i < 999; i++) await limiter.hit(`ip:${i}`, 20, 60_000);
    assert.equal(limiter.trackedKeys(), 999);
    now = 60_001;
    await limiter.hit("ip:late", 20, 60_000);
    assert.equal(limiter.trackedKeys(), 1);
  });
});

describe("unexpected errors", () => {
  test("become 500 Internal server error; the cause is logged with the request id, never sent", () => {
    const lines: string[] = [];
    const logger = pino({ level: "error" }, { write: (line: string) => lines.push(line) });
    const app = toAppError(new Error("password authentication failed for user admin"), logger, "req-1");
    const res = httpErrorResponse(app, "structured", "req-1");
    assert.equal(res.status, 500);
    assert.equal(JSON.stringify(res.body).includes("password"), false);
    assert.equal((res.body.error as { message: string }).message, "Internal server error");
    assert.equal(lines.length, 1);
    assert.match(lines[0], /password authentication failed/);
    assert.match(lines[0], /req-1/);
  });
});

describe("configuration", () => {
  test("RATE_LIMITS is validated with one clear line", () => {
    assert.deepEqual(loadConfig({ RATE_LIMITS: '{"offers":{"limit":10,"windowSeconds":5}}' }).rateLimits, { offers: { limit: 10, windowSeconds: 5 } });
    assert.throws(() => loadConfig({ RATE_LIMITS: "{" }), (err) => err instanceof ConfigError && /RATE_LIMITS must be JSON/.test(err.message));
    assert.throws(() => loadConfig({ RATE_LIMITS: '{"default":{"limit":-1,"windowSeconds":60}}' }), /RATE_LIMITS\.default needs positive integers/);
  });

  test("REDIS_CLUSTER_NODES: host:port pairs, instead of REDIS_URL, with a prefix that cannot replace the hash tag", () => {
    const cluster = loadConfig({ REDIS_CLUSTER_NODES: "10.0.0.1:7000, redis-b:7001,[::1]:7002", REDIS_KEY_PREFIX: "prod:" });
    assert.deepEqual(cluster.redisClusterNodes, [
      { host: "10.0.0.1", port: 7000 },
      { host: "redis-b", port: 7001 },
      { host: "::1", port: 7002 },
    ]);
    assert.deepEqual(redisTarget(cluster), cluster.redisClusterNodes);
    assert.equal(redisTarget(loadConfig({ REDIS_URL: "redis://r:6379" })), "redis://r:6379");
    assert.equal(redisTarget(loadConfig({})), null, "neither: the in-process stand-ins");
    for (const bad of ["redis-a", "redis-a:", ":7000", "redis-a:70000", "redis-a:7000,"]) {
      assert.throws(() => loadConfig({ REDIS_CLUSTER_NODES: bad }), (err) => err instanceof ConfigError && /REDIS_CLUSTER_NODES must be host:port pairs/.test(err.message), bad);
    }
    assert.throws(() => loadConfig({ REDIS_URL: "redis://r:6379", REDIS_CLUSTER_NODES: "a:7000" }), /set REDIS_URL or REDIS_CLUSTER_NODES, not both/);
    assert.throws(() => loadConfig({ REDIS_CLUSTER_NODES: "a:7000", REDIS_KEY_PREFIX: "{app}:" }), /REDIS_KEY_PREFIX must not contain \{ or \}/);
    assert.equal(loadConfig({ REDIS_URL: "redis://r:6379", REDIS_KEY_PREFIX: "{app}:" }).redisKeyPrefix, "{app}:", "a single node has no slots");
  });

  test("LLM_BASE_URL and LLM_MODEL go together; LLM_API_KEY is optional; none of them: the deterministic writer", () => {
    assert.equal(loadConfig({}).llm, null);
    assert.deepEqual(loadConfig({ LLM_BASE_URL: "http://127.0.0.1:8000/v1/", LLM_MODEL: "m" }).llm, { baseUrl: "http://127.0.0.1:8000/v1", model: "m", apiKey: null });
    assert.equal(loadConfig({ LLM_BASE_URL: "https://api.example/v1", LLM_MODEL: "m", LLM_API_KEY: "k" }).llm?.apiKey, "k");
    assert.throws(() => loadConfig({ LLM_MODEL: "m" }), (err) => err instanceof ConfigError && /LLM_BASE_URL and LLM_MODEL must be set together/.test(err.message));
    assert.throws(() => loadConfig({ LLM_BASE_URL: "ftp://x", LLM_MODEL: "m" }), /LLM_BASE_URL must be an http or https URL/);
  });
});

describe("liveness re-checks (spec 5.4)", () => {
  const pepper = "p".repeat(40);
  const rawKey = "krn_" + "a".repeat(64);
  const key = { tenant_id: "t1", id: "k1", user_id: "u1", scopes: ["control-plane"], expires_at: null, revoked_at: null } as unknown as ApiKeyRow;

  /** A fake store over one key and its user; `fail` makes every lookup throw, as a lost database would. */
  function fakeStore(keyChanges: Partial<ApiKeyRow> = {}) {
    const state = { user: { id: "u1", name: "ana", role: "admin", disabled: false } as UserRow, fail: false, revokedAt: null as Date | null, keyLookups: 0 };
    const lookup = <T>(value: () => T) => async () => {
      if (state.fail) throw new Error("connection refused");
      return value();
    };
    const store = {
      findApiKeyByHashAcrossTenants: lookup(() => {
        state.keyLookups++;
        return { ...key, ...keyChanges, ...(state.revokedAt && { revoked_at: state.revokedAt }) };
      }),
      findUser: lookup(() => ({ ...state.user })),
      touchApiKey: async () => {},
    } as unknown as IdentityStore;
    return { store, state };
  }

  function authenticator(store: IdentityStore, clock: { now: number }, secrets = createSecrets({ apiKeyPepper: pepper, jwtSigningSecret: "j".repeat(40) })) {
    return new Authenticator(store, secrets, null, createLogger("silent"), () => clock.now);
  }
  const callWith = (apiKey: string) => ({ header: (name: string) => (name === "x-api-key" ? apiKey : undefined), remoteAddress: "" });
  const call = callWith(rawKey);

  test("a valid key's HMAC is computed once per process, an unknown key's on every request; a kept key is still checked for revocation", async () => {
    const clock = { now: 1_000_000 };
    const { store, state } = fakeStore();
    const secrets = createSecrets({ apiKeyPepper: pepper, jwtSigningSecret: "j".repeat(40) });
    let hmacs = 0;
    const auth = authenticator(store, clock, { ...secrets, apiKeyPepper: () => (hmacs++, secrets.apiKeyPepper()) });
    for (let i = 0; i < 3; i++) assert.equal((await auth.authenticate(call)).userId, "u1");
    assert.equal(hmacs, 1);
    // An unknown key (the fake store answers no row for it once the negative is cached) is hashed every time.
    const unknown = callWith("krn_" + "b".repeat(64));
    const none = authenticator({ ...store, findApiKeyByHashAcrossTenants: async () => null } as unknown as IdentityStore, clock, { ...secrets, apiKeyPepper: () => (hmacs++, secrets.apiKeyPepper()) });
    hmacs = 0;
    for (let i = 0; i < 3; i++) await assert.rejects(none.authenticate(unknown), { reason: "INVALID_API_KEY" });
    assert.equal(hmacs, 3);
    // Revoked after it was kept: rejected once the key cache has expired, its row read again.
    state.revokedAt = new Date(clock.now);
    clock.now += LIVENESS_CACHE_MS;
    hmacs = 0;
    const lookups = state.keyLookups;
    await assert.rejects(auth.authenticate(call), { code: "UNAUTHENTICATED", reason: "INVALID_API_KEY" });
    assert.equal(state.keyLookups, lookups + 1);
    assert.equal(hmacs, 0);
  });

  test("a disabled user is seen within 30 seconds, without any invalidation message", async () => {
    assert.ok(LIVENESS_CACHE_MS <= 30_000);
    const clock = { now: 1_000_000 };
    const { store, state } = fakeStore();
    const auth = authenticator(store, clock);
    assert.equal((await auth.authenticate(call)).userId, "u1");
    state.user.disabled = true;
    clock.now += LIVENESS_CACHE_MS - 1;
    assert.equal((await auth.authenticate(call)).userId, "u1", "still within the cache");
    clock.now += 1;
    await assert.rejects(auth.authenticate(call), { code: "UNAUTHENTICATED", reason: "USER_INACTIVE" });
  });

  test("a key stops working when it expires, whatever the cache holds", async () => {
    const clock = { now: 1_000_000 };
    const { store } = fakeStore({ expires_at: new Date(clock.now + 5_000) });
    const auth = authenticator(store, clock);
    assert.equal((await auth.authenticate(call)).userId, "u1");
    clock.now += 5_000;
    await assert.rejects(auth.authenticate(call), { code: "UNAUTHENTICATED", reason: "INVALID_API_KEY" });
  });

  test("a failing lookup rejects (fail closed), and the failure is not cached", async () => {
    const clock = { now: 1_000_000 };
    const { store, state } = fakeStore();
    const auth = authenticator(store, clock);
    state.fail = true;
    await assert.rejects(auth.authenticate(call), { code: "UNAUTHENTICATED", reason: "LIVENESS_CHECK_FAILED" });
    state.fail = false;
    assert.equal((await auth.authenticate(call)).userId, "u1");
  });
});
