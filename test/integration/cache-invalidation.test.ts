import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { Sequelize } from "sequelize";
import { create } from "@bufbuild/protobuf";
import { ListApiKeysRequestSchema, RevokeApiKeyRequestSchema } from "../../gen/decisioning/v1/identity_pb.js";
import { createSequelize } from "../../src/platform/db.js";
import { createRedis, connectRedis, type Redis } from "../../src/platform/redis.js";
import { createRedisBus, type Bus } from "../../src/platform/bus.js";
import { createLogger } from "../../src/platform/logger.js";
import { createSecrets } from "../../src/platform/secrets.js";
import { TtlCache } from "../../src/platform/ttl-cache.js";
import { InvalidatedCache } from "../../src/platform/invalidated-cache.js";
import type { TenantContext } from "../../src/platform/context.js";
import { IdentityStore, type ApiKeyRow } from "../../src/identity/identity-store.js";
import { IdentityService } from "../../src/identity/identity-service.js";
import { Authenticator } from "../../src/identity/authenticator.js";
import { createTestDatabase, requireEnv } from "../support/database.js";
import { TEST_JWT_SECRET, TEST_PEPPER } from "../support/service.js";

/**
 * A load that started before a change must not store the old value after it: a revocation would
 * otherwise be undone for the cache's lifetime (30 s for credentials).
 */
const logger = createLogger("silent");
const prefix = `test:${randomBytes(6).toString("hex")}:`;
let db: Sequelize;
let redis: Redis;
let buses: Bus[];

before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 4 });
  redis = createRedis(requireEnv("TEST_REDIS_URL"), prefix);
  await connectRedis(redis);
  // Two buses on one Redis: two processes, as far as pub/sub can tell.
  buses = [await createRedisBus(redis, prefix, logger), await createRedisBus(redis, prefix, logger)];
});
after(async () => {
  for (const bus of buses) await bus.close();
  redis.disconnect();
  await db.close();
});

/** A promise with its resolve, to hold a load in flight while the test changes the world. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("TtlCache", () => {
  test("a load in flight when its key is deleted answers its callers but is not kept; later callers load afresh", async () => {
    const cache = new TtlCache<string>(30_000);
    const slow = deferred<string>();
    let loads = 0;
    const earlier = cache.get("k", () => (loads++, slow.promise));
    cache.delete("k");
    const later = cache.get("k", async () => (loads++, "new"));
    slow.resolve("old");
    assert.equal(await earlier, "old", "the caller that came before the delete gets what it started");
    assert.equal(await later, "new", "a caller after the delete does not join the disowned load");
    assert.equal(await cache.get("k", async () => (loads++, "newer")), "new", "the fresh load is kept");
    assert.equal(loads, 2);
  });

  test("clear disowns loads in flight too", async () => {
    const cache = new TtlCache<string>(30_000);
    const slow = deferred<string>();
    const earlier = cache.get("k", () => slow.promise);
    cache.clear();
    slow.resolve("old");
    await earlier;
    assert.equal(await cache.get("k", async () => "new"), "new");
  });
});

describe("a revocation racing an API-key lookup (real Postgres and Redis)", () => {
  test("a lookup that read the key before the revocation does not make it work again afterwards", async () => {
    const secrets = createSecrets({ apiKeyPepper: TEST_PEPPER, jwtSigningSecret: TEST_JWT_SECRET });
    const identity = new IdentityService(new IdentityStore(db), secrets, buses[0]);
    const { tenantId, userId, apiKey } = await identity.createTenant("race");
    const [key] = (await identity.listApiKeys({ tenantId } as TenantContext, create(ListApiKeysRequestSchema))).data;

    // The authenticating process (the other bus) reads the key, then is held before it caches it.
    const read = deferred();
    const release = deferred();
    let held = false;
    class HeldStore extends IdentityStore {
      override async findApiKeyByHashAcrossTenants(hash: string): Promise<ApiKeyRow | null> {
        const row = await super.findApiKeyByHashAcrossTenants(hash);
        if (!held) {
          held = true;
          read.resolve();
          await release.promise;
        }
        return row;
      }
    }
    const auth = new Authenticator(new HeldStore(db), secrets, null, logger);
    await auth.listen(buses[1]);
    const call = { header: (name: string) => (name === "x-api-key" ? apiKey : undefined), remoteAddress: "" };

    const started = auth.authenticate(call);
    await read.promise;
    const ctx: TenantContext = { tenantId, userId, actorName: "admin", role: "admin", principal: { kind: "internal" }, requestId: "" };
    await identity.revokeApiKey(ctx, create(RevokeApiKeyRequestSchema, { id: key.id, reason: "leaked" }));
    const later = auth.authenticate(call);
    release.resolve();
    await assert.rejects(later, { reason: "INVALID_API_KEY" }, "a request after the revocation does not join the old lookup");
    assert.equal((await started).tenantId, tenantId, "the request that started before the revocation completes");
    await assert.rejects(auth.authenticate(call), { reason: "INVALID_API_KEY" }, "the old lookup did not cache the unrevoked key");
  });
});

describe("InvalidatedCache (its doc: a load in flight when its key is invalidated is not kept)", () => {
  for (const path of ["invalidate() on this process", "a message from another process (listen)"] as const) {
    test(`through ${path}`, async () => {
      const channel = `cache-${randomBytes(4).toString("hex")}`;
      let value = "old";
      const gate = deferred();
      let gated = true;
      const cache = new InvalidatedCache<string>(buses[1], channel, async () => {
        const read = value;
        if (gated) {
          gated = false;
          await gate.promise;
        }
        return read;
      });
      await cache.listen();
      // Subscribed after the cache, so it hears a message once the cache's handler has run.
      const delivered = deferred();
      await buses[1].subscribe(channel, () => delivered.resolve());
      const started = cache.get("k");
      await new Promise((r) => setImmediate(r));
      value = "new";
      if (path === "invalidate() on this process") await cache.invalidate("k");
      else await new InvalidatedCache<string>(buses[0], channel, async () => value).invalidate("k");
      await delivered.promise;
      const later = cache.get("k");
      gate.resolve();
      assert.equal(await later, "new", "a get after the invalidation does not join the old load");
      assert.equal(await started, "old");
      assert.equal(await cache.get("k"), "new", "the old load, finishing last, was not kept");
    });
  }
});
