import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
let mine: { tenantId: string; apiKey: string };
let theirs: { tenantId: string; apiKey: string };

before(async () => {
  svc = await startTestService();
  mine = await svc.createTenant("mine");
  theirs = await svc.createTenant("theirs");
});
after(() => svc.stop());

const call = (method: string, path: string, key: string, body: unknown = {}) =>
  rest(svc.baseUrl, method, path, { key, body: method === "GET" ? undefined : body });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await call("POST", `/api/v1/${path}`, mine.apiKey, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

test("another tenant's ids are 404 on every catalog route, and nothing of the owner's changes", async () => {
  const category = await create("categories", { name: "Cards" });
  const ids: Record<string, string> = {
    categories: category,
    "sub-categories": await create("sub-categories", { name: "Gold", categoryId: category }),
    channels: await create("channels", { name: "email", type: "email" }),
    "outcome-types": await create("outcome-types", { name: "Signed", key: "signed", category: "positive" }),
    offers: await create("offers", { name: "Gold card" }),
  };
  ids.placements = await create("placements", { name: "hero", channelId: ids.channels });
  ids.creatives = await create("creatives", { name: "hero banner", offerId: ids.offers, channelId: ids.channels });
  await call("DELETE", `/api/v1/offers/${ids.offers}`, mine.apiKey);
  const deletedOffer = ids.offers;
  ids.offers = await create("offers", { name: "Platinum card" });
  const snapshot = async () => (await svc.running.foundation.db.query(
    "SELECT id, version, deleted_at, updated_at FROM offers WHERE tenant_id = $1 UNION ALL SELECT id, version, deleted_at, updated_at FROM creatives WHERE tenant_id = $1 UNION ALL SELECT id, version, deleted_at, updated_at FROM catalog_entries WHERE tenant_id = $1 ORDER BY id",
    { bind: [mine.tenantId] },
  ))[0];
  const before = await snapshot();

  for (const [collection, id] of Object.entries(ids)) {
    const attempts: Array<[string, string, unknown?]> = [
      ["GET", `/api/v1/${collection}/${id}`],
      ["PUT", `/api/v1/${collection}`, { id, name: "hijacked" }],
      ["DELETE", `/api/v1/${collection}?id=${id}`],
    ];
    if (collection === "offers") attempts.push(["PUT", `/api/v1/offers/${id}`, { name: "hijacked" }], ["DELETE", `/api/v1/offers/${id}`]);
    for (const [method, path, body] of attempts) {
      const res = await call(method, path, theirs.apiKey, body);
      assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
      assert.doesNotMatch(JSON.stringify(res.body), /hijacked|Cards|Gold|Platinum/);
    }
    const list = await call("GET", `/api/v1/${collection}?limit=100&includeDeleted=true`, theirs.apiKey);
    assert.equal(list.status, 200);
    assert.ok(!list.body.data.some((row: any) => row.id === id), `${collection} list leaks`);
  }
  const restore = await call("POST", `/api/v1/restore?entityType=offer&id=${deletedOffer}`, theirs.apiKey);
  assert.equal(restore.status, 404);
  assert.deepEqual(await snapshot(), before);
});
