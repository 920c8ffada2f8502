import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
let admin: { tenantId: string; userId: string; apiKey: string };
let editor: { userId: string; apiKey: string };
let viewer: { userId: string; apiKey: string };
let other: { tenantId: string; userId: string; apiKey: string };

const future = () => new Date(Date.now() + 86_400_000).toISOString();
let n = 0;
const uniqueName = (base = "offer") => `${base}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

async function createOffer(body: Record<string, unknown> = {}, key = admin.apiKey) {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name: uniqueName(), ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function createEntry(path: string, body: Record<string, unknown>, key = admin.apiKey) {
  const res = await rest(svc.baseUrl, "POST", `/api/v1/${path}`, { key, body: { name: uniqueName(path), ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function offerCount(tenantId: string): Promise<number> {
  const [rows] = await svc.running.foundation.db.query(`SELECT count(*)::int AS n FROM offers WHERE tenant_id = '${tenantId}'`);
  return (rows as Array<{ n: number }>)[0].n;
}

async function auditActions(entityId: string): Promise<string[]> {
  const [rows] = await svc.running.foundation.db.query(
    `SELECT action FROM audit_log WHERE entity_id = '${entityId}' ORDER BY seq`,
  );
  return (rows as Array<{ action: string }>).map((r) => r.action);
}

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  editor = await svc.createUser(admin.tenantId, "editor");
  viewer = await svc.createUser(admin.tenantId, "viewer");
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("POST /api/v1/offers", () => {
  test("201 with the defaults of spec 2.4, relations, version 1 and a create audit entry", async () => {
    const o = await createOffer({}, editor.apiKey);
    assert.equal(o.status, "draft");
    assert.equal(o.category, "engagement");
    assert.equal(o.group, "");
    assert.equal(o.priority, 50);
    assert.equal(o.businessValue, 50);
    assert.equal(o.mandatory, false);
    assert.equal(o.emergencyExcluded, false);
    assert.equal(o.version, 1);
    assert.equal(o.deletedAt, null);
    assert.equal(o.categoryId, null);
    assert.equal(o.categoryRef, null);
    assert.equal(o.subCategoryRef, null);
    assert.deepEqual(o.creatives, []);
    assert.deepEqual(o.tags, []);
    assert.deepEqual(o.metadata, {});
    assert.equal(o.tenantId, admin.tenantId);
    assert.ok(o.createdAt && o.updatedAt);
    assert.deepEqual(await auditActions(o.id), ["create"]);
  });

  test("all fields round-trip, with category references shown", async () => {
    const cat = await createEntry("categories", {});
    const sub = await createEntry("sub-categories", { categoryId: cat.id });
    const body = {
      status: "active",
      categoryId: cat.id,
      subCategoryId: sub.id,
      category: "retention",
      group: "g1",
      priority: 0,
      businessValue: 99.5,
      emergencyExcluded: true,
      description: "d",
      shortDesc: "s",
      eligibility: { all: [{ attribute: "age", op: "gte", value: 18 }] },
      budget: { perDay: 100 },
      schedule: { start: "2026-01-01" },
      tags: ["a", "b"],
      productType: "card",
      margin: 0.25,
      revenueValue: 120,
      metadata: { k: "v" },
    };
    const o = await createOffer(body);
    for (const [k, v] of Object.entries(body)) assert.deepEqual(o[k], v, k);
    assert.deepEqual(o.categoryRef, { id: cat.id, name: cat.name });
    assert.deepEqual(o.subCategoryRef, { id: sub.id, name: sub.name });
  });

  test("409 for a name that a live offer has; a deleted offer's name can be reused", async () => {
    const o = await createOffer();
    const dup = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: o.name } });
    assert.equal(dup.status, 409);
    assert.match(dup.body.detail, /^name: /);
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${o.id}`, { key: admin.apiKey, body: {} })).status, 204);
    const again = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: o.name } });
    assert.equal(again.status, 201);
    // Restoring the first now collides with the live one.
    const restore = await rest(svc.baseUrl, "POST", `/api/v1/restore?entityType=offer&id=${o.id}`, { key: admin.apiKey, body: {} });
    assert.equal(restore.status, 409);
  });

  test("bad fields are 400 naming the field, and nothing is written", async () => {
    const foreignCat = await createEntry("categories", {}, other.apiKey);
    const before = await offerCount(admin.tenantId);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: undefined }, /^name: is required/],
      [{ name: "" }, /^name: must not be empty/],
      [{ name: "x".repeat(256) }, /^name: must be at most 255/],
      [{ priority: 101 }, /^priority: must be between 0 and 100/],
      [{ priority: -1 }, /^priority: /],
      [{ priority: 50.5 }, /^priority: /],
      [{ priority: "high" }, /^priority: /],
      [{ businessValue: 100.1 }, /^businessValue: /],
      [{ status: "live" }, /^status: must be one of draft, active, paused, archived/],
      [{ categoryId: foreignCat.id }, /^categoryId: unknown category/],
      [{ categoryId: "not-an-id" }, /^categoryId: unknown category/],
      [{ subCategoryId: foreignCat.id }, /^subCategoryId: unknown sub-category/],
      [{ tags: "a" }, /^tags: /],
      [{ eligibility: [1] }, /^eligibility: /],
      [{ mandatoryExpiresAt: "soon" }, /^mandatoryExpiresAt: /],
    ];
    for (const [body, message] of cases) {
      const payload = { name: uniqueName(), ...body };
      if (body.name === undefined && "name" in body) delete (payload as Record<string, unknown>).name;
      const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: payload });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.title, "Bad Request");
      assert.match(res.body.detail, message, JSON.stringify(body));
    }
    assert.equal(await offerCount(admin.tenantId), before);
  });

  test("name holds 255 characters counted as code points (spec 2.4: string 1-255): 255 emoji fit, 256 do not", async () => {
    const emoji = (n: number, tag: string) => `${tag}${"\u{1F600}".repeat(n - tag.length)}`;
    for (const n of [128, 255]) {
      const name = emoji(n, `e${n}${Math.random().toString(36).slice(2, 6)}`);
      const created = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name } });
      assert.equal(created.status, 201, `${n}: ${JSON.stringify(created.body).slice(0, 200)}`);
      assert.equal(created.body.name, name, "stored whole");
      const renamed = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { id: created.body.id, name: `${name.slice(0, -2)}\u{1F601}` } });
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body).slice(0, 200));
    }
    const tooLong = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: "\u{1F600}".repeat(256) } });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.detail, /^name: must be at most 255 characters/);
  });

  test("viewers cannot create; unknown body fields are ignored", async () => {
    assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: viewer.apiKey, body: { name: uniqueName() } })).status, 403);
    const o = await createOffer({ somethingElse: 1 });
    assert.equal(o.somethingElse, undefined);
  });
});

describe("mandatory offers (spec 2.4, 7)", () => {
  test("only admins may set mandatory: 403 for editors, nothing written", async () => {
    const before = await offerCount(admin.tenantId);
    const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", {
      key: editor.apiKey,
      body: { name: uniqueName(), mandatory: true, mandatoryReason: "r", mandatoryExpiresAt: future(), mandatoryApprovedBy: admin.userId },
    });
    assert.equal(res.status, 403);
    assert.equal(await offerCount(admin.tenantId), before);
  });

  test("reason, future expiry and an admin approver of the tenant are all required", async () => {
    const otherAdmin = other.userId;
    const base = { mandatory: true, mandatoryReason: "regulatory", mandatoryExpiresAt: future(), mandatoryApprovedBy: admin.userId };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, mandatoryReason: undefined }, /mandatoryReason: is required/],
      [{ ...base, mandatoryExpiresAt: undefined }, /mandatoryExpiresAt: is required/],
      [{ ...base, mandatoryApprovedBy: undefined }, /mandatoryApprovedBy: is required/],
      [{ ...base, mandatoryExpiresAt: new Date(Date.now() - 1000).toISOString() }, /mandatoryExpiresAt: must be in the future/],
      [{ ...base, mandatoryApprovedBy: editor.userId }, /mandatoryApprovedBy: must be an admin user of this tenant/],
      [{ ...base, mandatoryApprovedBy: otherAdmin }, /mandatoryApprovedBy: must be an admin user of this tenant/],
      [{ ...base, mandatoryApprovedBy: "nobody" }, /mandatoryApprovedBy: must be an admin user of this tenant/],
    ];
    for (const [body, message] of cases) {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: uniqueName(), ...body } });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, message);
    }
  });

  test("a mandatoryExpiresAt on a day that does not exist is the 400 of any bad timestamp, on POST and PUT; leap days stand", async () => {
    const base = { mandatory: true, mandatoryReason: "regulatory", mandatoryApprovedBy: admin.userId };
    const post = (mandatoryExpiresAt: string) =>
      rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: uniqueName(), ...base, mandatoryExpiresAt } });
    const unparseable = await post("2030-13-01T00:00:00Z");
    assert.equal(unparseable.status, 400);
    assert.match(unparseable.body.detail, /^mandatoryExpiresAt: /);
    const before = await offerCount(admin.tenantId);
    for (const day of ["2030-02-30T00:00:00Z", "2030-04-31T00:00:00Z", "2031-02-29T00:00:00Z"]) {
      const res = await post(day);
      assert.equal(res.status, 400, `${day}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.detail, unparseable.body.detail, day);
    }
    assert.equal(await offerCount(admin.tenantId), before);
    const plain = await createOffer();
    const put = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { id: plain.id, ...base, mandatoryExpiresAt: "2030-02-30T00:00:00Z" } });
    assert.equal(put.status, 400, JSON.stringify(put.body));
    assert.equal(put.body.detail, unparseable.body.detail);
    const leap = await post("2028-02-29T00:00:00Z");
    assert.equal(leap.status, 201, JSON.stringify(leap.body));
    assert.equal(leap.body.mandatoryExpiresAt, "2028-02-29T00:00:00Z");
  });

  test("an admin sets it with everything required; a mandatory_override entry sits beside the change", async () => {
    const o = await createOffer({ mandatory: true, mandatoryReason: "regulatory", mandatoryExpiresAt: future(), mandatoryApprovedBy: admin.userId });
    assert.equal(o.mandatory, true);
    assert.equal(o.mandatoryReason, "regulatory");
    assert.equal(o.mandatoryApprovedBy, admin.userId);
    assert.deepEqual(await auditActions(o.id), ["create", "mandatory_override"]);
    const plain = await createOffer();
    const upd = await rest(svc.baseUrl, "PUT", "/api/v1/offers", {
      key: admin.apiKey,
      body: { id: plain.id, mandatory: true, mandatoryReason: "r", mandatoryExpiresAt: future(), mandatoryApprovedBy: admin.userId },
    });
    assert.equal(upd.status, 200);
    assert.deepEqual(await auditActions(plain.id), ["create", "update", "mandatory_override"]);
    const byEditor = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: editor.apiKey, body: { id: plain.id, mandatory: true } });
    assert.equal(byEditor.status, 403);
  });

  test("PUT /offers checks the offer as it will be: one that stays mandatory keeps reason, expiry and approver", async () => {
    const o = await createOffer({ mandatory: true, mandatoryReason: "regulatory", mandatoryExpiresAt: future(), mandatoryApprovedBy: admin.userId });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ mandatoryReason: null }, /^mandatoryReason: is required when mandatory is true$/],
      [{ mandatoryReason: " " }, /^mandatoryReason: is required when mandatory is true$/],
      [{ mandatoryExpiresAt: null }, /^mandatoryExpiresAt: is required when mandatory is true$/],
      [{ mandatoryApprovedBy: null }, /^mandatoryApprovedBy: is required when mandatory is true$/],
      [{ mandatoryExpiresAt: new Date(Date.now() - 1000).toISOString() }, /^mandatoryExpiresAt: must be in the future$/],
      [{ mandatoryApprovedBy: editor.userId }, /^mandatoryApprovedBy: must be an admin user of this tenant$/],
    ];
    for (const key of [admin.apiKey, editor.apiKey]) {
      for (const [body, message] of cases) {
        const res = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key, body: { id: o.id, ...body } });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(res.body.detail, message);
      }
    }
    const kept = await rest(svc.baseUrl, "GET", `/api/v1/offers/${o.id}`, { key: admin.apiKey });
    assert.equal(kept.body.mandatory, true);
    assert.equal(kept.body.mandatoryReason, "regulatory");
    assert.equal(kept.body.mandatoryApprovedBy, admin.userId);
    assert.ok(kept.body.mandatoryExpiresAt);
    assert.equal(kept.body.version, 1);
    const reworded = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: editor.apiKey, body: { id: o.id, mandatoryReason: "audit" } });
    assert.equal(reworded.status, 200, JSON.stringify(reworded.body));
    assert.equal(reworded.body.mandatoryReason, "audit");
    const off = await rest(svc.baseUrl, "PUT", "/api/v1/offers", {
      key: admin.apiKey,
      body: { id: o.id, mandatory: false, mandatoryReason: null, mandatoryExpiresAt: null, mandatoryApprovedBy: null },
    });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal(off.body.mandatory, false);
    assert.equal(off.body.mandatoryReason, null);
    assert.equal(off.body.mandatoryExpiresAt, null);
    assert.equal(off.body.mandatoryApprovedBy, null);
  });
});

describe("PUT /api/v1/offers (collection update)", () => {
  test("changes only the given fields, increments version, works by name, and null clears", async () => {
    const cat = await createEntry("categories", {});
    const o = await createOffer({ categoryId: cat.id, priority: 10, description: "keep" });
    const res = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: editor.apiKey, body: { id: o.id, priority: 70 } });
    assert.equal(res.status, 200);
    assert.equal(res.body.priority, 70);
    assert.equal(res.body.description, "keep");
    assert.equal(res.body.categoryId, cat.id);
    assert.equal(res.body.version, 2);
    assert.ok(Array.isArray(res.body.creatives));
    const byName = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: editor.apiKey, body: { id: o.name, categoryId: null } });
    assert.equal(byName.status, 200);
    assert.equal(byName.body.categoryId, null);
    assert.equal(byName.body.categoryRef, null);
    assert.equal(byName.body.version, 3);
    const [rows] = await svc.running.foundation.db.query(
      `SELECT before, after, entity_version FROM audit_log WHERE entity_id = '${o.id}' AND action = 'update' ORDER BY seq`,
    );
    const entries = rows as Array<{ before: any; after: any; entity_version: number }>;
    assert.equal(entries.length, 2);
    assert.equal(entries[0].before.priority, 10);
    assert.equal(entries[0].after.priority, 70);
    assert.equal(entries[1].entity_version, 3);
  });

  test("404 for an unknown, deleted or foreign offer; 400 without id; nothing changes", async () => {
    const theirs = await createOffer({}, other.apiKey);
    for (const id of [theirs.id, theirs.name, "01a203f6-939c-77cb-95b9-000000000000", "nope"]) {
      const res = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { id, priority: 1 } });
      assert.equal(res.status, 404, id);
    }
    const unchanged = await rest(svc.baseUrl, "GET", `/api/v1/offers/${theirs.id}`, { key: other.apiKey });
    assert.equal(unchanged.body.priority, 50);
    assert.equal(unchanged.body.version, 1);
    const missing = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { priority: 1 } });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /^id: is required/);
    const invalid = await createOffer();
    const bad = await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { id: invalid.id, priority: 500, name: "" } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /name: must not be empty; priority: must be between 0 and 100/);
    const after = await rest(svc.baseUrl, "GET", `/api/v1/offers/${invalid.id}`, { key: admin.apiKey });
    assert.equal(after.body.version, 1);
  });
});

describe("/api/v1/offers/{id}", () => {
  test("GET returns the bare offer by id or name; 404 when deleted or foreign", async () => {
    const o = await createOffer();
    for (const ref of [o.id, encodeURIComponent(o.name)]) {
      const res = await rest(svc.baseUrl, "GET", `/api/v1/offers/${ref}`, { key: viewer.apiKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.id, o.id);
      assert.equal("creatives" in res.body, false);
      assert.equal("categoryRef" in res.body, false);
    }
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/offers/${o.id}`, { key: other.apiKey })).status, 404);
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${o.id}`, { key: admin.apiKey, body: {} });
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/offers/${o.id}`, { key: admin.apiKey })).status, 404);
  });

  test("PUT accepts only the listed fields, ignores mandatory, keeps the version", async () => {
    const o = await createOffer();
    const res = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${o.id}`, {
      key: editor.apiKey,
      body: { priority: 80, mandatory: true, version: 9, tags: ["x"], unknownField: 1 },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.priority, 80);
    assert.equal(res.body.mandatory, false);
    assert.equal(res.body.version, 1);
    assert.deepEqual(res.body.tags, ["x"]);
    assert.equal("creatives" in res.body, false);
    const foreignCat = await createEntry("categories", {}, other.apiKey);
    const cross = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${o.id}`, { key: editor.apiKey, body: { categoryId: foreignCat.id } });
    assert.equal(cross.status, 400);
  });

  test("PUT ignores fields outside the accepted list whatever their type, over REST and Connect JSON", async () => {
    const o = await createOffer();
    const ignored: Array<Record<string, unknown>> = [
      { mandatory: "notbool" },
      { mandatoryExpiresAt: "garbage" },
      { mandatoryApprovedBy: 5 },
      { mandatoryReason: 7 },
      { mandatory_reason: [] },
      { version: "abc", tenantId: 5 },
    ];
    let priority = 30;
    for (const extra of ignored) {
      const res = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${o.id}`, { key: editor.apiKey, body: { priority: ++priority, ...extra } });
      assert.equal(res.status, 200, `${JSON.stringify(extra)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.priority, priority);
      assert.equal(res.body.mandatory, false);
      assert.equal(res.body.mandatoryReason, null);
    }
    const connect = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.OfferService/PatchOffer", {
      key: editor.apiKey,
      rawBody: JSON.stringify({ id: o.id, priority: 60, mandatory: "notbool", mandatoryExpiresAt: "garbage" }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(connect.status, 200, JSON.stringify(connect.body));
    assert.equal(connect.body.priority, 60);
    // Accepted fields are still strictly typed.
    const wrong = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${o.id}`, { key: editor.apiKey, body: { priority: "high", mandatory: "notbool" } });
    assert.equal(wrong.status, 400);
    assert.match(wrong.body.detail, /^priority: /);
    assert.doesNotMatch(wrong.body.detail, /mandatory/);
  });

  test("a malformed body is 400 Invalid JSON, not 415", async () => {
    const o = await createOffer();
    const token = await oauthToken(["write"]);
    for (const type of ["application/json", "text/plain"]) {
      const res = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${o.id}`, { bearer: token, rawBody: "{oops", headers: { "content-type": type } });
      assert.equal(res.status, 400, type);
      assert.equal(res.body.detail, "Invalid JSON");
    }
  });

  test("DELETE soft-deletes without cascade or version increment; no POST or PATCH on the path", async () => {
    const o = await createOffer();
    const c = await rest(svc.baseUrl, "POST", "/api/v1/creatives", { key: admin.apiKey, body: { offerId: o.id, name: "banner" } });
    assert.equal(c.status, 201);
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${o.id}`, { key: editor.apiKey, body: {} });
    assert.equal(del.status, 204, "spec 7: a successful delete is 204");
    assert.equal(del.body, null, "no body");
    assert.equal(del.headers.get("content-type"), null);
    const creative = await rest(svc.baseUrl, "GET", `/api/v1/creatives/${c.body.id}`, { key: admin.apiKey });
    assert.equal(creative.status, 200, "the creative is not deleted");
    const [rows] = await svc.running.foundation.db.query(`SELECT version, deleted_at FROM offers WHERE id = '${o.id}'`);
    assert.equal((rows as any[])[0].version, 1);
    assert.ok((rows as any[])[0].deleted_at);
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${o.id}`, { key: editor.apiKey, body: {} })).status, 404);
    for (const verb of ["POST", "PATCH"]) {
      assert.equal((await rest(svc.baseUrl, verb, `/api/v1/offers/${o.id}`, { key: admin.apiKey, body: {} })).status, 405, verb);
    }
    // Only REST's answer is bodiless: RPC callers still get DeleteResponse.
    const other = await createOffer();
    const connect = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.OfferService/RemoveOffer", {
      key: editor.apiKey,
      rawBody: JSON.stringify({ id: other.id }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(connect.status, 200);
    assert.deepEqual(connect.body, { success: true, id: other.id, cascaded: 0 });
  });
});

describe("DELETE /api/v1/offers and restore", () => {
  test("cascades to creatives with version increments and an audit entry per entity", async () => {
    const o = await createOffer();
    const ids: string[] = [];
    for (const name of ["a", "b"]) {
      const c = await rest(svc.baseUrl, "POST", "/api/v1/creatives", { key: admin.apiKey, body: { offerId: o.id, name } });
      ids.push(c.body.id);
    }
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${o.id}`, { key: editor.apiKey, body: {} });
    assert.equal(del.status, 200);
    assert.equal(del.body.cascaded, 2);
    const [offer] = (await svc.running.foundation.db.query(`SELECT version, deleted_at FROM offers WHERE id = '${o.id}'`))[0] as any[];
    assert.equal(offer.version, 2);
    assert.ok(offer.deleted_at);
    for (const id of ids) {
      const [c] = (await svc.running.foundation.db.query(`SELECT version, deleted_at FROM creatives WHERE id = '${id}'`))[0] as any[];
      assert.equal(c.version, 2);
      assert.ok(c.deleted_at);
      assert.deepEqual(await auditActions(id), ["create", "soft_delete"]);
      const [entry] = (await svc.running.foundation.db.query(`SELECT changes FROM audit_log WHERE entity_id = '${id}' AND action = 'soft_delete'`))[0] as any[];
      assert.match(entry.changes.reason, /cascade/);
    }
    assert.deepEqual(await auditActions(o.id), ["create", "soft_delete"]);
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${o.id}`, { key: editor.apiKey, body: {} })).status, 404);
    assert.equal((await rest(svc.baseUrl, "DELETE", "/api/v1/offers", { key: editor.apiKey, body: {} })).status, 400);
  });

  test("deleting by name answers with the id of the offer it deleted", async () => {
    const o = await createOffer();
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${encodeURIComponent(o.name)}`, { key: editor.apiKey, body: {} });
    assert.equal(del.status, 200);
    assert.equal(del.body.id, o.id);
  });

  test("restore (admin) brings the offer back without its creatives", async () => {
    const o = await createOffer();
    const c = await rest(svc.baseUrl, "POST", "/api/v1/creatives", { key: admin.apiKey, body: { offerId: o.id, name: "c" } });
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${o.id}`, { key: admin.apiKey, body: {} });
    const byEditor = await rest(svc.baseUrl, "POST", `/api/v1/restore?entityType=offer&id=${o.id}`, { key: editor.apiKey, body: {} });
    assert.equal(byEditor.status, 403);
    const foreign = await rest(svc.baseUrl, "POST", `/api/v1/restore?entityType=offer&id=${o.id}`, { key: other.apiKey, body: {} });
    assert.equal(foreign.status, 404);
    const wrongType = await rest(svc.baseUrl, "POST", `/api/v1/restore?entityType=flow&id=${o.id}`, { key: admin.apiKey, body: {} });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.detail, /^entityType: /);
    const res = await rest(svc.baseUrl, "POST", `/api/v1/restore?entityType=offer&id=${o.id}`, { key: admin.apiKey, body: {} });
    assert.equal(res.status, 200);
    assert.equal(res.body.deletedAt, null);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/offers/${o.id}`, { key: admin.apiKey })).status, 200);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/creatives/${c.body.id}`, { key: admin.apiKey })).status, 404);
    assert.deepEqual(await auditActions(o.id), ["create", "soft_delete", "restore"]);
  });
});

describe("GET /api/v1/offers (cursor pages)", () => {
  test("newest first, no duplicates or gaps across pages even with concurrent inserts", async () => {
    const t = await svc.createTenant("paging");
    const created: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: `p${i}` } });
      created.push(r.body.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await rest(svc.baseUrl, "GET", `/api/v1/offers?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { key: t.apiKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.pagination.limit, 3);
      seen.push(...res.body.data.map((o: any) => o.id));
      cursor = res.body.pagination.cursor;
      assert.equal(res.body.pagination.hasMore, cursor !== null);
      // Inserts while paging land before the cursor (newest first) and never disturb later pages.
      await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: `during-${pages}` } });
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...created].reverse());
    const all = await rest(svc.baseUrl, "GET", "/api/v1/offers?limit=100", { key: t.apiKey });
    assert.equal(all.body.data.length, 10);
    assert.equal(all.body.pagination.cursor, null);
    assert.equal(all.body.pagination.hasMore, false);
  });

  test("includeDeleted, creatives in rows, limit validation, the 2,000 per minute bucket", async () => {
    const t = await svc.createTenant("listing");
    const a = (await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: "a" } })).body;
    await rest(svc.baseUrl, "POST", "/api/v1/creatives", { key: t.apiKey, body: { offerId: a.id, name: "c" } });
    const b = (await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: "b" } })).body;
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${b.id}`, { key: t.apiKey, body: {} });
    const live = await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey });
    assert.deepEqual(live.body.data.map((o: any) => o.name), ["a"]);
    assert.equal(live.body.data[0].creatives.length, 1);
    assert.equal(live.headers.get("x-ratelimit-limit"), "2000");
    const withDeleted = await rest(svc.baseUrl, "GET", "/api/v1/offers?includeDeleted=true", { key: t.apiKey });
    assert.deepEqual(withDeleted.body.data.map((o: any) => o.name), ["b", "a"]);
    const clamped = await rest(svc.baseUrl, "GET", "/api/v1/offers?limit=1000", { key: t.apiKey });
    assert.equal(clamped.status, 200);
    assert.equal(clamped.body.pagination.limit, 100, "spec 8: max 100, and 2.1's pagination.limit is the page size used");
    for (const q of ["limit=0", "limit=1.5", "limit=abc", "cursor=xyz"]) {
      const res = await rest(svc.baseUrl, "GET", `/api/v1/offers?${q}`, { key: t.apiKey });
      assert.equal(res.status, 400, q);
    }
    const other = await rest(svc.baseUrl, "GET", "/api/v1/categories", { key: t.apiKey });
    assert.equal(other.headers.get("x-ratelimit-limit"), "1000");
  });

  test("a body over 2 MB (2,000,000 bytes, not 2 MiB) is 413 on the offers routes", async () => {
    const body = { name: uniqueName(), description: "x".repeat(2_000_000) };
    assert.ok(Buffer.byteLength(JSON.stringify(body)) < 2 * 1024 * 1024, "over 2 MB, under 2 MiB");
    const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body });
    assert.equal(res.status, 413);
  });
});

async function oauthToken(scopes: string[]): Promise<string> {
  const c = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: admin.apiKey, body: { scopes } });
  const t = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: c.body.clientId, client_secret: c.body.clientSecret },
  });
  return t.body.access_token;
}
