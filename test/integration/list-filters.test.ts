import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { OfferService } from "../../gen/decisioning/v1/catalog_pb.js";
import { DecisionTraceService } from "../../gen/decisioning/v1/decisions_pb.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, rest, rpcError } from "../support/clients.js";

// The list filters beyond the spec (docs/catalog.md#list-filters, docs/decisioning.md#trace-filters).

let svc: TestService;
let tenant: { tenantId: string; apiKey: string };
let other: { tenantId: string; apiKey: string };

const get = (path: string, key = tenant.apiKey) => rest(svc.baseUrl, "GET", path, { key });

async function createOffer(name: string, status: string, key = tenant.apiKey) {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name, status } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; name: string };
}

/** Every page of a filtered offer list, following the cursor; `limit` small so that paging matters. */
async function allPages(query: string, key = tenant.apiKey): Promise<string[]> {
  const names: string[] = [];
  let cursor = "";
  for (let i = 0; i < 20; i++) {
    const res = await get(`/api/v1/offers?limit=2&${query}${cursor ? `&cursor=${cursor}` : ""}`, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    names.push(...res.body.data.map((o: { name: string }) => o.name));
    if (!res.body.pagination.hasMore) return names;
    cursor = res.body.pagination.cursor;
  }
  throw new Error("paging did not end");
}

/** A trace row written at `at`: listing reads only the summary columns. */
async function insertTrace(tenantId: string, customerId: string, at: string): Promise<string> {
  const id = randomUUID();
  await svc.sql(
    `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, trace, inputs_hash, policy_version_hash, created_at)
     VALUES ($1, $2, $3, $4, '\\x00', 'h', 'p', $5)`,
    [tenantId, id, randomUUID(), customerId, at],
  );
  return id;
}

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant();
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("GET /api/v1/offers?q=&status=", () => {
  before(async () => {
    // Oldest first, so that the newest-first order is the reverse of this list.
    for (const [name, status] of [
      ["Spring Sale", "active"],
      ["spring bonus", "draft"],
      ["SPRING cashback", "active"],
      ["Winter sale", "active"],
      ["Spring rebate", "active"],
      ["100% off_spring", "paused"],
      ["100x offer", "paused"],
    ]) await createOffer(name, status);
    await createOffer("Spring elsewhere", "active", other.apiKey);
  });

  test("q matches the name anywhere in any case, and pages stay newest first under the filter", async () => {
    assert.deepEqual(await allPages("q=spring"), ["100% off_spring", "Spring rebate", "SPRING cashback", "spring bonus", "Spring Sale"]);
  });

  test("status filters alone and together with q, across cursor pages", async () => {
    assert.deepEqual(await allPages("status=active"), ["Spring rebate", "Winter sale", "SPRING cashback", "Spring Sale"]);
    assert.deepEqual(await allPages("q=Spring&status=active"), ["Spring rebate", "SPRING cashback", "Spring Sale"]);
    assert.deepEqual(await allPages("status=archived"), []);
  });

  test("LIKE wildcards in q stand for themselves", async () => {
    assert.deepEqual(await allPages(`q=${encodeURIComponent("100%")}`), ["100% off_spring"]);
    assert.deepEqual(await allPages("q=f_s"), ["100% off_spring"]);
    assert.deepEqual(await allPages("q=_"), ["100% off_spring"]);
  });

  test("another tenant's offers never match", async () => {
    assert.deepEqual(await allPages("q=elsewhere"), []);
    assert.deepEqual(await allPages("q=spring", other.apiKey), ["Spring elsewhere"]);
  });

  test("an unknown status or an overlong q is a 400 naming the field", async () => {
    for (const [query, field] of [
      ["status=live", "status"],
      ["status=ACTIVE", "status"],
      [`q=${"x".repeat(256)}`, "q"],
    ]) {
      const res = await get(`/api/v1/offers?${query}`);
      assert.equal(res.status, 400, query);
      assert.match(res.body.detail, new RegExp(`^${field}: `), query);
    }
  });

  test("Connect answers the same filter, and rejects a bad status the same way", async () => {
    const client = connectClient(OfferService, svc.baseUrl);
    const headers = { headers: { "x-api-key": tenant.apiKey } };
    const res = await client.listOffers({ q: "SPRING", status: "active", limit: 100 }, headers);
    assert.deepEqual(res.data.map((o) => o.name), ["Spring rebate", "SPRING cashback", "Spring Sale"]);
    const err = await rpcError(client.listOffers({ status: "gone" }, headers));
    assert.equal(err.code, 3);
    assert.match(err.message, /^status: /);
  });

  test("the other catalog lists take the same filters; models have no status to filter on", async () => {
    const flow = await rest(svc.baseUrl, "POST", "/api/v1/decision-flows", { key: tenant.apiKey, body: { name: "Checkout flow", key: "checkout" } });
    assert.equal(flow.status, 201, JSON.stringify(flow.body));
    const flows = await get("/api/v1/decision-flows?q=checkout&status=draft");
    assert.equal(flows.status, 200, JSON.stringify(flows.body));
    assert.deepEqual(flows.body.data.map((f: { name: string }) => f.name), ["Checkout flow"]);
    const models = await get("/api/v1/algorithm-models?status=active");
    assert.equal(models.status, 400);
    assert.match(models.body.detail, /^status: /);
  });
});

describe("GET /api/v1/decision-traces?since=&until=", () => {
  const ids: Record<string, string> = {};
  before(async () => {
    ids.jan = await insertTrace(tenant.tenantId, "c-1", "2026-01-10T12:00:00Z");
    ids.feb = await insertTrace(tenant.tenantId, "c-1", "2026-02-10T12:00:00Z");
    ids.feb2 = await insertTrace(tenant.tenantId, "c-2", "2026-02-20T08:00:00Z");
    ids.mar = await insertTrace(tenant.tenantId, "c-1", "2026-03-10T12:00:00Z");
    await insertTrace(other.tenantId, "c-1", "2026-02-15T12:00:00Z");
  });
  const list = async (query: string, key = tenant.apiKey) => {
    const res = await get(`/api/v1/decision-traces?${query}`, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { ids: res.body.data.map((t: { id: string }) => t.id), total: res.body.pagination.total };
  };

  test("since and until bound the trace's time, inclusively, newest first", async () => {
    assert.deepEqual(await list("since=2026-02-01T00:00:00Z"), { ids: [ids.mar, ids.feb2, ids.feb], total: 3 });
    assert.deepEqual(await list("until=2026-02-10T12:00:00Z"), { ids: [ids.feb, ids.jan], total: 2 });
    assert.deepEqual(await list("since=2026-02-01T00:00:00Z&until=2026-02-28T00:00:00Z"), { ids: [ids.feb2, ids.feb], total: 2 });
  });

  test("a date alone as until covers that whole day", async () => {
    assert.deepEqual(await list("since=2026-02-20&until=2026-02-20"), { ids: [ids.feb2], total: 1 });
  });

  test("the range works with customerId and with offset paging", async () => {
    assert.deepEqual(await list("customerId=c-1&since=2026-02-01T00:00:00Z"), { ids: [ids.mar, ids.feb], total: 2 });
    assert.deepEqual(await list("since=2026-01-01T00:00:00Z&limit=2&offset=2"), { ids: [ids.feb, ids.jan], total: 4 });
  });

  test("another tenant's traces in the window are never listed", async () => {
    assert.deepEqual((await list("since=2026-02-14T00:00:00Z&until=2026-02-16T00:00:00Z")).total, 0);
    assert.equal((await list("since=2026-02-14T00:00:00Z&until=2026-02-16T00:00:00Z", other.apiKey)).total, 1);
  });

  test("a bad time or since after until is a 400 naming the field", async () => {
    for (const [query, field] of [
      ["since=yesterday", "since"],
      ["until=2026-13-45", "until"],
      ["since=2026-03-01T00:00:00Z&until=2026-02-01T00:00:00Z", "until"],
    ]) {
      const res = await get(`/api/v1/decision-traces?${query}`);
      assert.equal(res.status, 400, query);
      assert.match(res.body.detail, new RegExp(`^${field}: `), query);
    }
  });

  test("Connect takes the same range as timestamps", async () => {
    const client = connectClient(DecisionTraceService, svc.baseUrl);
    const headers = { headers: { "x-api-key": tenant.apiKey } };
    const since = timestampFromDate(new Date("2026-02-01T00:00:00Z"));
    const until = timestampFromDate(new Date("2026-02-28T00:00:00Z"));
    const res = await client.listDecisionTraces({ since, until }, headers);
    assert.deepEqual(res.data.map((t) => t.id), [ids.feb2, ids.feb]);
    const err = await rpcError(client.listDecisionTraces({ since: until, until: since }, headers));
    assert.equal(err.code, 3);
    assert.match(err.message, /^until: /);
  });
});
