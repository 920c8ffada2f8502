import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService } from "../support/child-service.js";
import { startPrivateRedis } from "../support/private-redis.js";
import { rest } from "../support/clients.js";

type Tenant = { tenantId: string; userId: string; apiKey: string };

/** Eligible only for a customer whose stored (or sent) attributes carry a tier. */
const FOR_TIERED = { attribute: "customer.tier", op: "exists" };

/** The calls a test makes against one service process, as `tenant`. */
function as(baseUrl: string, tenant: Tenant, dataKey: string) {
  return {
    async offer(name: string) {
      const res = await rest(baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, body: { name, status: "active", eligibility: FOR_TIERED } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    },
    async putCustomer(customerId: string, attributes: Record<string, unknown>) {
      const res = await rest(baseUrl, "PUT", `/api/v1/customers/${customerId}`, { key: tenant.apiKey, body: { attributes } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    },
    async recommended(customerId: string): Promise<string[]> {
      const res = await rest(baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.offers.map((o: { offerId: string }) => o.offerId);
    },
    reset: () => rest(baseUrl, "POST", "/api/v1/workspace/reset", { key: tenant.apiKey, body: { confirm: tenant.tenantId } }),
    usage: async () => (await rest(baseUrl, "GET", "/api/v1/workspace/usage", { key: tenant.apiKey })).body.decisionsUsed,
  };
}

async function dataKey(svc: TestService, tenant: Tenant): Promise<string> {
  return (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "sdk" } })).body.key;
}

describe("workspace reset across processes", () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.stop());

  test("no process goes on serving a customer the reset deleted", async () => {
    const t = await svc.createTenant();
    const key = await dataKey(svc, t);
    const child = await startChildService(svc);
    try {
      const a = as(svc.baseUrl, t, key);
      const b = as(child.baseUrl, t, key);
      const before = await a.offer("before");
      await a.putCustomer("ana", { tier: "gold" });
      assert.deepEqual(await b.recommended("ana"), [before.id], "B has cached ana's attributes");
      assert.deepEqual(await a.recommended("ana"), [before.id], "so has A");

      const reset = await a.reset();
      assert.equal(reset.status, 200, JSON.stringify(reset.body));
      const fresh = await a.offer("after");
      await a.putCustomer("bo", { tier: "gold" });
      // The new offer reaches B within a pub/sub hop; bo, stored after the reset, shows when it has.
      for (let i = 0; i < 100 && !(await b.recommended("bo")).includes(fresh.id); i++) await sleep(20);
      assert.deepEqual(await b.recommended("bo"), [fresh.id]);

      assert.deepEqual(await b.recommended("ana"), [], "ana was deleted: no stored tier on B");
      assert.deepEqual(await a.recommended("ana"), [], "nor on A");
      assert.equal((await rest(child.baseUrl, "GET", "/api/v1/customers/ana", { key: t.apiKey })).status, 404);
    } finally {
      await child.stop();
    }
  });
});

describe("workspace reset when Redis fails after the commit", () => {
  test("answers 503 WORKSPACE_RESET_INCOMPLETE, serves the reset data meanwhile, and a repeated reset zeroes the counters", async () => {
    const redis = await startPrivateRedis();
    let redisDown = false;
    const svc = await startTestService({ redisUrl: redis.url });
    try {
      const t = await svc.createTenant();
      const a = as(svc.baseUrl, t, await dataKey(svc, t));
      const offer = await a.offer("doomed");
      await a.putCustomer("ana", { tier: "gold" });
      for (let i = 0; i < 3; i++) assert.deepEqual(await a.recommended("ana"), [offer.id]);
      assert.equal(await a.usage(), 3);
      const cache = svc.running.foundation.redis!;
      const tenantKeys = async () => (await cache.keys(`${svc.config.redisKeyPrefix}t:{${t.tenantId}}:*`)).length;
      assert.ok((await tenantKeys()) > 1, "the decision count and the offer's evidence");

      await redis.stop();
      redisDown = true;
      const failed = await a.reset();
      assert.equal(failed.status, 503, JSON.stringify(failed.body));
      assert.equal(failed.headers.get("x-error-reason"), "WORKSPACE_RESET_INCOMPLETE");
      assert.match(failed.body.detail, /repeat the reset to finish it/);
      assert.deepEqual((await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey })).body.data, [], "the data reset was committed");

      await redis.start();
      redisDown = false;
      for (let i = 0; (await rest(svc.baseUrl, "GET", "/healthz")).status !== 200; i++) {
        assert.ok(i < 100, "the service reconnects when Redis is back");
        await sleep(100);
      }
      assert.deepEqual(await a.recommended("ana"), [], "the deleted offer is not served from a stale snapshot");

      const retried = await a.reset();
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.equal(retried.body.decisionsUsed, 0);
      assert.equal(await tenantKeys(), 0, "every counter of the tenant is gone");
      const fresh = await a.offer("fresh");
      assert.deepEqual(await a.recommended("ana"), [], "ana was deleted");
      await a.putCustomer("bo", { tier: "gold" });
      assert.deepEqual(await a.recommended("bo"), [fresh.id]);
      assert.equal(await a.usage(), 1, "counted afresh from 0");
    } finally {
      // The service closes its Redis connection on stop, which waits for a Redis to close it with.
      if (redisDown) await redis.start();
      await svc.stop();
      await redis.stop();
    }
  });
});
