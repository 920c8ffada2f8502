import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { rest, connectClient, grpcClient } from "../support/clients.js";
import { CatalogEntryService } from "../../gen/decisioning/v1/catalog_pb.js";

let svc: TestService;
let t: { tenantId: string; userId: string; apiKey: string };
let other: { tenantId: string; userId: string; apiKey: string };

before(async () => {
  svc = await startTestService();
  t = await svc.createTenant();
  other = await svc.createTenant("other");
});
after(() => svc.stop());

const post = (path: string, body: unknown, key = t.apiKey) => rest(svc.baseUrl, "POST", `/api/v1/${path}`, { key, body });

describe("outcome types", () => {
  test("every new tenant starts with the default set, audit-logged as system", async () => {
    const res = await rest(svc.baseUrl, "GET", "/api/v1/outcome-types", { key: t.apiKey });
    assert.equal(res.status, 200);
    const byKey = Object.fromEntries(res.body.data.map((o: any) => [o.key, o.category]));
    assert.deepEqual(byKey, { impression: "impression", delivery: "impression", click: "positive", conversion: "positive", dismiss: "negative" });
    const [rows] = await svc.running.foundation.db.query(
      `SELECT user_name FROM audit_log WHERE tenant_id = '${t.tenantId}' AND entity_type = 'outcome_type'`,
    );
    assert.equal((rows as any[]).length, 5);
    assert.ok((rows as any[]).every((r) => r.user_name === "system"));
  });

  test("key unique per tenant (409); category checked; another tenant may reuse the key", async () => {
    const dup = await post("outcome-types", { name: "Clicked again", key: "click", category: "positive" });
    assert.equal(dup.status, 409);
    assert.match(dup.body.detail, /^key: /);
    const bad = await post("outcome-types", { name: "x", key: "x", category: "great" });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^category: must be one of positive, negative, impression, neutral/);
    const missing = await post("outcome-types", { name: "x" });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /key: is required/);
    const ok = await post("outcome-types", { name: "Purchase", key: "purchase", category: "positive" }, other.apiKey);
    assert.equal(ok.status, 201);
    const same = await post("outcome-types", { name: "Purchase", key: "purchase", category: "positive" });
    assert.equal(same.status, 201);
  });
});

describe("categories, sub-categories, channels, placements", () => {
  test("CRUD with versions, soft delete and audit; names unique among live entries", async () => {
    const c = await post("categories", { name: "Cards", description: "credit cards" });
    assert.equal(c.status, 201);
    assert.equal(c.body.version, 1);
    assert.equal(c.body.deletedAt, null);
    assert.equal((await post("categories", { name: "Cards" })).status, 409);
    const upd = await rest(svc.baseUrl, "PUT", "/api/v1/categories", { key: t.apiKey, body: { id: c.body.id, description: "all cards" } });
    assert.equal(upd.status, 200);
    assert.equal(upd.body.version, 2);
    assert.equal(upd.body.name, "Cards");
    const got = await rest(svc.baseUrl, "GET", `/api/v1/categories/${c.body.id}`, { key: t.apiKey });
    assert.equal(got.body.description, "all cards");
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/categories/${c.body.id}`, { key: other.apiKey })).status, 404);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/channels/${c.body.id}`, { key: t.apiKey })).status, 404, "a category is not a channel");
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/categories?id=${c.body.id}`, { key: t.apiKey, body: {} });
    assert.equal(del.status, 204, "spec 7: a successful delete is 204");
    assert.equal(del.body, null, "no body");
    assert.equal(del.headers.get("content-type"), null);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/categories/${c.body.id}`, { key: t.apiKey })).status, 404);
    assert.equal((await post("categories", { name: "Cards" })).status, 201, "a deleted entry's name can be reused");
    const [rows] = await svc.running.foundation.db.query(`SELECT action, entity_version FROM audit_log WHERE entity_id = '${c.body.id}' ORDER BY seq`);
    assert.deepEqual((rows as any[]).map((r) => [r.action, r.entity_version]), [["create", 1], ["update", 2], ["soft_delete", 3]]);
  });

  test("references must be live entries of the tenant (400), by kind", async () => {
    const mine = await post("categories", { name: "Loans" });
    const theirs = await post("categories", { name: "Loans" }, other.apiKey);
    const channel = await post("channels", { name: "email", type: "email" });
    assert.equal((await post("sub-categories", { name: "Mortgage", categoryId: mine.body.id })).status, 201);
    for (const [body, field] of [
      [{ name: "x", categoryId: theirs.body.id }, "categoryId"],
      [{ name: "y", categoryId: channel.body.id }, "categoryId"],
      [{ name: "z" }, "categoryId"],
    ] as const) {
      const res = await post("sub-categories", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, new RegExp(`^${field}: `));
    }
    const placement = await post("placements", { name: "hero", channelId: channel.body.id });
    assert.equal(placement.status, 201);
    assert.equal(placement.body.channelId, channel.body.id);
    assert.equal((await post("placements", { name: "side", channelId: mine.body.id })).status, 400);
  });

  test("viewers read but do not write; pages are cursor pages", async () => {
    const viewer = await svc.createUser(t.tenantId, "viewer");
    assert.equal((await post("channels", { name: "sms" }, viewer.apiKey)).status, 403);
    for (const name of ["push-a", "push-b"]) assert.equal((await post("channels", { name })).status, 201);
    const list = await rest(svc.baseUrl, "GET", "/api/v1/channels?limit=1", { key: viewer.apiKey });
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.pagination.hasMore, true);
    assert.equal(typeof list.body.pagination.cursor, "string");
  });

  test("the same collection answers alike over Connect and gRPC", async () => {
    const req = { collection: "categories", limit: 100 };
    const headers = { headers: { "x-api-key": t.apiKey } };
    const viaConnect = await connectClient(CatalogEntryService, svc.baseUrl).listCatalogEntries(req, headers);
    const viaGrpc = await grpcClient(CatalogEntryService, svc.grpcAddress).listCatalogEntries(req, headers);
    const viaRest = await rest(svc.baseUrl, "GET", "/api/v1/categories?limit=100", { key: t.apiKey });
    assert.deepEqual(viaConnect.data.map((c) => c.id), viaGrpc.data.map((c) => c.id));
    assert.deepEqual(viaConnect.data.map((c) => c.id), viaRest.body.data.map((c: any) => c.id));
    assert.ok(viaConnect.data.length >= 2);
    const unknown = await rest(svc.baseUrl, "GET", "/api/v1/no-such-things", { key: t.apiKey });
    assert.equal(unknown.status, 404);
  });

  test("every collection's REST DELETE answers 204 without a body; Connect and gRPC keep DeleteResponse", async () => {
    // One RPC serves every collection through additional_bindings; its policy's 204 holds for each.
    const bodies: Record<string, object> = { channels: {}, segments: { config: { condition: { attribute: "country", op: "eq", value: "NL" } } } };
    for (const [collection, body] of Object.entries(bodies)) {
      const entry = await post(collection, { name: `gone-${collection}`, ...body });
      assert.equal(entry.status, 201, JSON.stringify(entry.body));
      const del = await rest(svc.baseUrl, "DELETE", `/api/v1/${collection}?id=${entry.body.id}`, { key: t.apiKey, headers: { "x-requested-with": "test" } });
      assert.deepEqual([del.status, del.body], [204, null], collection);
      assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/${collection}/${entry.body.id}`, { key: t.apiKey })).status, 404);
    }
    const headers = { headers: { "x-api-key": t.apiKey } };
    const [a, b] = [(await post("channels", { name: "rpc-a" })).body.id, (await post("channels", { name: "rpc-b" })).body.id];
    const viaConnect = await connectClient(CatalogEntryService, svc.baseUrl).deleteCatalogEntry({ collection: "channels", id: a }, headers);
    const viaGrpc = await grpcClient(CatalogEntryService, svc.grpcAddress).deleteCatalogEntry({ collection: "channels", id: b }, headers);
    assert.deepEqual([viaConnect.success, viaConnect.id, viaGrpc.success, viaGrpc.id], [true, a, true, b]);
  });
});

describe("creatives", () => {
  test("links to an offer, a channel and a placement of the tenant; foreign ones are 400", async () => {
    const offer = await post("offers", { name: "Gold card" });
    const channel = await post("channels", { name: "web" });
    const placement = await post("placements", { name: "banner", channelId: channel.body.id });
    const theirOffer = await post("offers", { name: "Theirs" }, other.apiKey);
    const theirChannel = await post("channels", { name: "web" }, other.apiKey);
    const ok = await post("creatives", { offerId: offer.body.id, channelId: channel.body.id, placementId: placement.body.id, name: "hero", content: { headline: "Hi" } });
    assert.equal(ok.status, 201);
    assert.equal(ok.body.version, 1);
    assert.equal(ok.body.status, "active");
    assert.deepEqual(ok.body.content, { headline: "Hi" });
    for (const [body, field] of [
      [{ offerId: theirOffer.body.id, name: "x" }, "offerId"],
      [{ offerId: offer.body.id, channelId: theirChannel.body.id, name: "x" }, "channelId"],
      [{ offerId: offer.body.id, placementId: channel.body.id, name: "x" }, "placementId"],
      [{ name: "x" }, "offerId"],
    ] as const) {
      const res = await post("creatives", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, new RegExp(`${field}: `));
    }
    const upd = await rest(svc.baseUrl, "PUT", "/api/v1/creatives", { key: t.apiKey, body: { id: ok.body.id, name: "hero-2" } });
    assert.equal(upd.body.version, 2);
    const list = await rest(svc.baseUrl, "GET", `/api/v1/creatives?offerId=${offer.body.id}`, { key: t.apiKey });
    assert.deepEqual(list.body.data.map((c: any) => c.id), [ok.body.id]);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/creatives?offerId=bad", { key: t.apiKey })).status, 400);
    const withCreative = await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey });
    const row = withCreative.body.data.find((o: any) => o.id === offer.body.id);
    assert.equal(row.creatives[0].name, "hero-2");
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/creatives?id=${ok.body.id}`, { key: t.apiKey, headers: { "x-requested-with": "test" } });
    assert.deepEqual([del.status, del.body], [204, null], "spec 7: 204 without a body");
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/creatives/${ok.body.id}`, { key: t.apiKey })).status, 404);
  });
});
