import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
let child: ChildService;
type Actor = { userId: string; apiKey: string };
let admin: Actor & { tenantId: string };
let admin2: Actor;
let admin3: Actor;
let editor: Actor;
let editor2: Actor;
let viewer: Actor;
let other: Actor & { tenantId: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

const call = (method: string, path: string, body?: unknown, key = admin.apiKey, baseUrl = svc.baseUrl) =>
  rest(baseUrl, method, path, { key, body: body ?? (method === "GET" ? undefined : {}) });

async function sql(query: string, bind: unknown[] = []): Promise<any[]> {
  return (await svc.running.foundation.db.query(query, { bind }))[0] as any[];
}

async function propose(body: Record<string, unknown>, key = admin.apiKey) {
  const res = await call("POST", "/api/v1/approvals", body, key);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; status: string; stages: any[]; entityId: string | null };
}

const resolve = (id: string, decision: string, key: string, comment = "") => call("POST", `/api/v1/approvals/${id}`, { decision, comment }, key);

async function offer(fields: Record<string, unknown> = {}) {
  const res = await call("POST", "/api/v1/offers", { name: unique("offer"), status: "active", priority: 10, ...fields });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; name: string; priority: number; version: number };
}

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  admin2 = await svc.createUser(admin.tenantId, "admin");
  admin3 = await svc.createUser(admin.tenantId, "admin");
  editor = await svc.createUser(admin.tenantId, "editor");
  editor2 = await svc.createUser(admin.tenantId, "editor");
  viewer = await svc.createUser(admin.tenantId, "viewer");
  other = await svc.createTenant("other");
});
after(async () => {
  await child?.stop();
  await svc.stop();
});

describe("staged review", () => {
  test("a create waits for its stages and is applied by the last approval, audited like a direct write", async () => {
    const name = unique("approved-offer");
    const req = await propose({ entityType: "offer", action: "create", payload: { name, priority: 40 }, stages: [{ requiredRole: "editor" }, { requiredRole: "admin" }], comment: "new offer" }, editor.apiKey);
    assert.equal(req.status, "pending");
    assert.equal(req.entityId, null);
    assert.deepEqual(req.stages.map((s) => [s.requiredRole, s.status]), [["editor", "pending"], ["admin", "waiting"]]);

    // The requester cannot approve; a viewer cannot decide at all.
    const self = await resolve(req.id, "approve", editor.apiKey);
    assert.equal(self.status, 403);
    assert.match(JSON.stringify(self.body), /cannot approve their own/);
    assert.equal((await resolve(req.id, "approve", viewer.apiKey)).status, 403);

    const first = await resolve(req.id, "approve", admin2.apiKey, "looks fine");
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.status, "pending");
    assert.deepEqual(first.body.stages.map((s: any) => s.status), ["approved", "pending"]);
    assert.equal(first.body.stages[0].decidedBy, admin2.userId);
    assert.equal((await call("GET", `/api/v1/offers?limit=100`)).body.data.filter((o: any) => o.name === name).length, 0, "nothing applied before the last stage");

    // Nobody approves two stages.
    const twice = await resolve(req.id, "approve", admin2.apiKey);
    assert.equal(twice.status, 403);
    assert.match(JSON.stringify(twice.body), /two stages/);

    const last = await resolve(req.id, "approve", admin3.apiKey);
    assert.equal(last.status, 200, JSON.stringify(last.body));
    assert.equal(last.body.status, "approved");
    assert.ok(last.body.resolvedAt);
    const created = (await call("GET", `/api/v1/offers/${last.body.entityId}`)).body;
    assert.equal(created.name, name);
    assert.equal(created.priority, 40);
    const entries = await sql("SELECT action, entity_type, user_id FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [admin.tenantId, created.id]);
    assert.deepEqual(entries.map((e) => [e.action, e.entity_type, e.user_id]), [["create", "offer", admin3.userId]]);
    const approvalEntries = await sql("SELECT action, changes->>'stage' AS stage FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq", [admin.tenantId, req.id]);
    assert.deepEqual(approvalEntries.map((e) => [e.action, e.stage]), [["create", null], ["approve", "1"], ["approve", "2"]]);

    const again = await resolve(req.id, "reject", admin.apiKey);
    assert.equal(again.status, 409);
  });

  test("reject closes the request, applies nothing and leaves later stages waiting", async () => {
    const o = await offer();
    const req = await propose({ entityType: "offer", action: "update", entityId: o.id, payload: { priority: 99 }, stages: [{ requiredRole: "editor" }, { requiredRole: "admin" }] });
    const res = await resolve(req.id, "reject", editor2.apiKey, "no");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "rejected");
    assert.deepEqual(res.body.stages.map((s: any) => s.status), ["rejected", "waiting"]);
    assert.equal((await call("GET", `/api/v1/offers/${o.id}`)).body.priority, 10);
    assert.equal((await resolve(req.id, "approve", admin2.apiKey)).status, 409);
  });

  test("an editor cannot decide an admin stage; delete and update apply through the offer service", async () => {
    const o = await offer();
    const upd = await propose({ entityType: "offer", action: "update", entityId: o.id, payload: { priority: 55 }, stages: [{ requiredRole: "admin" }] }, editor.apiKey);
    const refused = await resolve(upd.id, "approve", editor2.apiKey);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.reason, "STAGE_ROLE_REQUIRED");
    assert.equal((await resolve(upd.id, "approve", admin.apiKey)).status, 200);
    const updated = (await call("GET", `/api/v1/offers/${o.id}`)).body;
    assert.equal(updated.priority, 55);
    assert.equal(updated.version, o.version + 1);

    const del = await propose({ entityType: "offer", action: "delete", entityId: o.id }, editor.apiKey);
    assert.equal((await resolve(del.id, "approve", admin2.apiKey)).status, 200);
    assert.equal((await call("GET", `/api/v1/offers/${o.id}`)).status, 404);
  });

  test("the default stage is one editor stage (spec 4.10): another editor decides it, and so does an admin", async () => {
    const o = await offer();
    const upd = await propose({ entityType: "offer", action: "update", entityId: o.id, payload: { priority: 66 } }, editor.apiKey);
    assert.deepEqual(upd.stages.map((s) => [s.requiredRole, s.status]), [["editor", "pending"]]);
    assert.equal((await resolve(upd.id, "approve", viewer.apiKey)).status, 403, "viewers never decide");
    const approved = await resolve(upd.id, "approve", editor2.apiKey);
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.status, "approved");
    assert.equal((await call("GET", `/api/v1/offers/${o.id}`)).body.priority, 66);
    const rejected = await propose({ entityType: "offer", action: "update", entityId: o.id, payload: { priority: 67 } }, admin.apiKey);
    const res = await resolve(rejected.id, "reject", editor.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "rejected");
    const byAdmin = await propose({ entityType: "offer", action: "update", entityId: o.id, payload: { priority: 68 } }, editor.apiKey);
    assert.equal((await resolve(byAdmin.id, "approve", admin2.apiKey)).status, 200);
  });

  test("list filters by status and pages with a cursor", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await propose({ entityType: "channel", action: "create", payload: { name: unique("ch") } })).id);
    const page1 = await call("GET", "/api/v1/approvals?status=pending&limit=2");
    assert.equal(page1.status, 200);
    assert.equal(page1.body.data.length, 2);
    assert.equal(page1.body.pagination.hasMore, true);
    assert.ok(page1.body.data.every((a: any) => a.status === "pending"));
    const page2 = await call("GET", `/api/v1/approvals?status=pending&limit=2&cursor=${page1.body.pagination.cursor}`);
    assert.ok(page2.body.data.length >= 1);
    const seen = new Set([...page1.body.data, ...page2.body.data].map((a: any) => a.id));
    assert.ok(seen.has(ids[2]) && seen.has(ids[1]));
    assert.equal((await call("GET", "/api/v1/approvals?status=approved")).body.data.every((a: any) => a.status === "approved"), true);
    assert.equal((await call("GET", "/api/v1/approvals?status=maybe")).status, 400);
  });
});

describe("bad input", () => {
  test("a missing entityType, a bad payload and a foreign entity are refused at create, naming the field", async () => {
    for (const entityType of [undefined, "", "  ", "x".repeat(101)]) {
      const res = await call("POST", "/api/v1/approvals", { entityType, action: "create", payload: {} });
      assert.equal(res.status, 400, JSON.stringify(entityType));
      assert.match(res.body.detail, /^entityType: /);
    }
    const badAction = await call("POST", "/api/v1/approvals", { entityType: "spaceship", action: "launch", payload: {} });
    assert.equal(badAction.status, 400);
    assert.match(badAction.body.detail, /^action: /);

    const bad = await call("POST", "/api/v1/approvals", { entityType: "offer", action: "create", payload: { name: unique("o"), priority: 500 } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /payload\.priority/);
    const missing = await call("POST", "/api/v1/approvals", { entityType: "qualificationRule", action: "create", payload: { name: unique("q") } });
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.body), /payload\.config/);

    const foreign = await call("POST", "/api/v1/offers", { name: unique("foreign") }, other.apiKey);
    const cross = await call("POST", "/api/v1/approvals", { entityType: "offer", action: "update", entityId: foreign.body.id, payload: { priority: 1 } });
    assert.equal(cross.status, 400);
    assert.match(JSON.stringify(cross.body), /entityId/);

    const stage = await call("POST", "/api/v1/approvals", { entityType: "channel", action: "create", payload: { name: unique("c") }, stages: [{ requiredRole: "viewer" }] });
    assert.equal(stage.status, 400);
    assert.match(JSON.stringify(stage.body), /stages\[0\]\.requiredRole/);
    assert.equal((await call("POST", "/api/v1/approvals", { entityType: "channel", action: "create", payload: { name: unique("c") } }, viewer.apiKey)).status, 403);
    assert.equal(Number((await sql("SELECT count(*) AS n FROM approval_requests WHERE tenant_id = $1 AND stages @> '[{\"requiredRole\":\"viewer\"}]'", [admin.tenantId]))[0].n), 0);
  });

  test("an entity type nothing can apply is stored, and its final approval is a 409 that changes nothing (spec 3.5, 7)", async () => {
    const req = await propose({ entityType: "widget", action: "create", payload: { name: "x" }, stages: [{ requiredRole: "editor" }, { requiredRole: "admin" }] }, editor.apiKey);
    assert.equal(req.status, "pending");
    // An earlier stage is only a review: it is recorded as usual.
    assert.equal((await resolve(req.id, "approve", editor2.apiKey)).status, 200);
    const before = await sql("SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1", [admin.tenantId]);
    const res = await resolve(req.id, "approve", admin.apiKey);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.reason, "APPROVAL_NOT_APPLICABLE");
    assert.match(res.body.detail, /^unsupported approval entity type "widget"/);
    const stored = (await call("GET", `/api/v1/approvals/${req.id}`)).body;
    assert.equal(stored.status, "pending");
    assert.equal(stored.resolvedAt, null);
    assert.deepEqual(stored.stages.map((s: any) => s.status), ["approved", "pending"]);
    assert.deepEqual(await sql("SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1", [admin.tenantId]), before);
    // Rejecting one needs nothing applied.
    assert.equal((await resolve(req.id, "reject", admin.apiKey)).body.status, "rejected");

    const update = await propose({ entityType: "Offer", action: "update", entityId: "7f2c1a4e-0000-4000-8000-000000000000", payload: { priority: 1 } }, editor.apiKey);
    assert.equal((await resolve(update.id, "approve", admin.apiKey)).status, 409);
    assert.equal((await call("GET", `/api/v1/approvals/${update.id}`)).body.status, "pending");
  });

  test("another tenant's request is 404 to read and to resolve", async () => {
    const req = await propose({ entityType: "channel", action: "create", payload: { name: unique("c") } });
    assert.equal((await call("GET", `/api/v1/approvals/${req.id}`, undefined, other.apiKey)).status, 404);
    assert.equal((await resolve(req.id, "approve", other.apiKey)).status, 404);
    assert.equal((await call("GET", `/api/v1/approvals/${req.id}`)).body.status, "pending");
  });

  test("a payload that no longer applies at approval rolls everything back with 409", async () => {
    const name = unique("taken");
    const req = await propose({ entityType: "offer", action: "create", payload: { name } }, editor.apiKey);
    await offer({ name });
    const res = await resolve(req.id, "approve", admin.apiKey);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /no longer applies/);
    const stored = (await call("GET", `/api/v1/approvals/${req.id}`)).body;
    assert.equal(stored.status, "pending");
    assert.deepEqual(stored.stages.map((s: any) => s.status), ["pending"]);
    assert.equal(Number((await sql("SELECT count(*) AS n FROM offers WHERE tenant_id = $1 AND name = $2", [admin.tenantId, name]))[0].n), 1);
    assert.equal((await sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND action = 'approve'", [admin.tenantId, req.id])).length, 0);
  });
});

describe("concurrency", () => {
  /** Two approvers of one request's last stage at once, through `baseUrls`; one wins, once. */
  async function race(baseUrls: [string, string]) {
    for (let round = 0; round < 3; round++) {
      const name = unique("race");
      const req = await propose({ entityType: "offer", action: "create", payload: { name } }, editor.apiKey);
      const results = await Promise.all([
        rest(baseUrls[0], "POST", `/api/v1/approvals/${req.id}`, { key: admin2.apiKey, body: { decision: "approve" } }),
        rest(baseUrls[1], "POST", `/api/v1/approvals/${req.id}`, { key: admin3.apiKey, body: { decision: "approve" } }),
      ]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 409], JSON.stringify(results.map((r) => r.body)));
      assert.equal(Number((await sql("SELECT count(*) AS n FROM offers WHERE tenant_id = $1 AND name = $2", [admin.tenantId, name]))[0].n), 1);
      assert.equal(Number((await sql("SELECT count(*) AS n FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND action = 'approve'", [admin.tenantId, req.id]))[0].n), 1);
    }
  }

  test("two approvers of the last stage apply the payload once", () => race([svc.baseUrl, svc.baseUrl]));

  test("two approvers on two processes apply the payload once", async () => {
    child = await startChildService(svc);
    await race([svc.baseUrl, child.baseUrl]);
  });
});

describe("expiry", () => {
  test("the approvals-expire job expires stale pending requests, changing only status and resolvedAt", async () => {
    const stale = await propose({ entityType: "channel", action: "create", payload: { name: unique("c") } });
    const fresh = await propose({ entityType: "channel", action: "create", payload: { name: unique("c") } });
    await sql("UPDATE approval_requests SET created_at = now() - interval '169 hours', updated_at = now() - interval '169 hours' WHERE tenant_id = $1 AND id = $2", [admin.tenantId, stale.id]);
    const [beforeRow] = await sql("SELECT * FROM approval_requests WHERE id = $1", [stale.id]);
    const job = svc.running.services.approvals.jobs.find((j) => j.route === "approvals-expire")!;
    await job.run(new Date());
    await job.run(new Date()); // idempotent
    const [afterRow] = await sql("SELECT * FROM approval_requests WHERE id = $1", [stale.id]);
    assert.equal(afterRow.status, "expired");
    assert.ok(afterRow.resolved_at);
    const { status: _s, resolved_at: _r, ...restAfter } = afterRow;
    const { status: _s2, resolved_at: _r2, ...restBefore } = beforeRow;
    assert.deepEqual(restAfter, restBefore);
    assert.equal((await call("GET", `/api/v1/approvals/${fresh.id}`)).body.status, "pending");
    assert.equal((await resolve(stale.id, "approve", admin2.apiKey)).status, 409);
  });
});

describe("publish approval", () => {
  test("with requirePublishApproval one approval authorizes exactly one publish and changes nothing in the flow", async () => {
    const flow = await call("POST", "/api/v1/decision-flows", { name: unique("flow"), key: unique("flow"), status: "active" });
    assert.equal(flow.status, 201, JSON.stringify(flow.body));
    assert.equal((await call("PUT", "/api/v1/tenant-settings", { requirePublishApproval: true })).body.requirePublishApproval, true);
    try {
      const refused = await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v1" });
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(JSON.stringify(refused.body), /publish approval/);

      const req = await propose({ entityType: "decisionFlow", action: "publish", entityId: flow.body.id }, editor.apiKey);
      assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v1" })).status, 409, "a pending approval authorizes nothing");
      assert.equal((await resolve(req.id, "approve", admin.apiKey)).status, 200);
      const unchanged = (await call("GET", `/api/v1/decision-flows/${flow.body.id}`)).body;
      assert.equal(unchanged.version, flow.body.version);

      const published = await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v1" });
      assert.equal(published.status, 200, JSON.stringify(published.body));
      assert.ok((await call("GET", `/api/v1/approvals/${req.id}`)).body.consumedAt);
      assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v2" })).status, 409, "one approval, one publish");
    } finally {
      await call("PUT", "/api/v1/tenant-settings", { requirePublishApproval: false });
    }
    assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v3" })).status, 200);
  });

  test("with requirePublishApproval a rollback needs and uses up one publish approval too", async () => {
    const flow = await call("POST", "/api/v1/decision-flows", { name: unique("flow"), key: unique("flow"), status: "active" });
    for (const notes of ["v1", "v2"]) assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes })).status, 200);
    assert.equal((await call("PUT", "/api/v1/tenant-settings", { requirePublishApproval: true })).status, 200);
    try {
      const refused = await call("POST", `/api/v1/decision-flows/${flow.body.id}/rollback`, { toVersion: 1, notes: "back" });
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(JSON.stringify(refused.body), /PUBLISH_APPROVAL_REQUIRED/);
      assert.match(JSON.stringify(refused.body), /rolling back/);
      const req = await propose({ entityType: "decisionFlow", action: "publish", entityId: flow.body.id }, editor.apiKey);
      assert.equal((await resolve(req.id, "approve", admin.apiKey)).status, 200);
      // A refused rollback (no such version) leaves the approval unused.
      assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/rollback`, { toVersion: 9, notes: "x" })).status, 400);
      assert.equal((await call("GET", `/api/v1/approvals/${req.id}`)).body.consumedAt, null);
      const rolled = await call("POST", `/api/v1/decision-flows/${flow.body.id}/rollback`, { toVersion: 1, notes: "back" });
      assert.equal(rolled.status, 200, JSON.stringify(rolled.body));
      assert.equal(rolled.body.publishedVersion, 3);
      assert.ok((await call("GET", `/api/v1/approvals/${req.id}`)).body.consumedAt);
      assert.equal((await call("POST", `/api/v1/decision-flows/${flow.body.id}/rollback`, { toVersion: 2, notes: "again" })).status, 409, "one approval, one rollback");
    } finally {
      await call("PUT", "/api/v1/tenant-settings", { requirePublishApproval: false });
    }
  });
});

describe("registry moves through approvals", () => {
  test("an algorithmModel publish request carries the promote body and, once approved, moves the model as the promote route does", async () => {
    const model = await call("POST", "/api/v1/algorithm-models", { name: unique("model"), key: unique("model"), type: "adaptive" });
    assert.equal(model.status, 201, JSON.stringify(model.body));
    const id = model.body.id;
    // The move is checked at create by the registry's own rules, fields named under payload.
    const illegal = await call("POST", "/api/v1/approvals", { entityType: "algorithmModel", action: "publish", entityId: id, payload: { toStatus: "champion", family: "f" } }, editor.apiKey);
    assert.equal(illegal.status, 400, JSON.stringify(illegal.body));
    assert.match(JSON.stringify(illegal.body), /payload\.toStatus.*cannot move a draft model to champion/);
    const noStatus = await call("POST", "/api/v1/approvals", { entityType: "algorithmModel", action: "publish", entityId: id, payload: {} }, editor.apiKey);
    assert.equal(noStatus.status, 400);
    assert.match(JSON.stringify(noStatus.body), /payload\.toStatus/);
    const foreign = await call("POST", "/api/v1/approvals", { entityType: "algorithmModel", action: "publish", entityId: id, payload: { toStatus: "shadow", family: "f" } }, other.apiKey);
    assert.equal(foreign.status, 400, "another tenant's model is a foreign reference");
    assert.match(JSON.stringify(foreign.body), /entityId/);
    assert.equal((await call("POST", "/api/v1/approvals", { entityType: "offer", action: "publish", entityId: id, payload: {} })).status, 400, "publish is for flows and models");

    const req = await propose({ entityType: "algorithmModel", action: "publish", entityId: id, payload: { toStatus: "challenger", family: "fam-approved" } }, editor.apiKey);
    assert.equal((await call("GET", `/api/v1/algorithm-models/${id}`)).body.registryStatus, "draft", "nothing moves before approval");
    const approved = await resolve(req.id, "approve", admin.apiKey);
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.status, "approved");
    const moved = (await call("GET", `/api/v1/algorithm-models/${id}`)).body;
    assert.deepEqual([moved.registryStatus, moved.family], ["challenger", "fam-approved"]);
    // Audited as the promote route audits a move, by the final approver.
    const [entry] = await sql(
      `SELECT user_id, changes FROM audit_log WHERE tenant_id = $1 AND entity_type = 'algorithm_model' AND entity_id = $2 AND changes ? 'registryMove'`,
      [admin.tenantId, id],
    );
    assert.deepEqual(entry.changes.registryMove, { from: "draft", to: "challenger" });
    assert.equal(entry.user_id, admin.userId);

    // A move that no longer applies at approval (the model was archived meanwhile) rolls back, 409.
    const later = await propose({ entityType: "algorithmModel", action: "publish", entityId: id, payload: { toStatus: "shadow" } }, editor.apiKey);
    assert.equal((await call("POST", `/api/v1/algorithm-models/${id}/promote`, { toStatus: "archived" })).status, 200);
    const stale = await resolve(later.id, "approve", admin.apiKey);
    assert.equal(stale.status, 409, JSON.stringify(stale.body));
    assert.match(JSON.stringify(stale.body), /APPROVAL_NOT_APPLICABLE/);
    assert.equal((await call("GET", `/api/v1/approvals/${later.id}`)).body.status, "pending");
    assert.equal((await call("GET", `/api/v1/algorithm-models/${id}`)).body.registryStatus, "archived");
  });
});

describe("ai recommendations", () => {
  test("CRUD for admins, a bad patch is refused, and direct apply is idempotent", async () => {
    const o = await offer();
    const bad = await call("POST", "/api/v1/ai/recommendations", { entityType: "offer", entityId: o.id, patch: { priority: -3 }, rationale: "x" });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: any) => e.field), ["patch.priority"], "named where it sits in this body");
    assert.equal((await call("POST", "/api/v1/ai/recommendations", { entityType: "offer", entityId: o.id, patch: {} }, editor.apiKey)).status, 403);

    const rec = await call("POST", "/api/v1/ai/recommendations", { entityType: "offer", entityId: o.id, patch: { priority: 70 }, rationale: "converts better" });
    assert.equal(rec.status, 201, JSON.stringify(rec.body));
    const upd = await call("PUT", `/api/v1/ai/recommendations/${rec.body.id}`, { rationale: "converts much better" });
    assert.equal(upd.body.rationale, "converts much better");
    assert.equal((await call("GET", "/api/v1/ai/recommendations?status=pending")).body.data.some((r: any) => r.id === rec.body.id), true);
    assert.equal((await call("GET", `/api/v1/ai/recommendations/${rec.body.id}`, undefined, other.apiKey)).status, 404);

    const applied = await call("POST", `/api/v1/ai/recommendations/${rec.body.id}/apply`);
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    assert.equal(applied.body.status, "applied");
    const again = await call("POST", `/api/v1/ai/recommendations/${rec.body.id}/apply`);
    assert.equal(again.status, 200);
    const current = (await call("GET", `/api/v1/offers/${o.id}`)).body;
    assert.equal(current.priority, 70);
    assert.equal(current.version, o.version + 1, "applied once");

    const doomed = await call("POST", "/api/v1/ai/recommendations", { entityType: "channel", entityId: (await call("POST", "/api/v1/channels", { name: unique("ch") })).body.id, patch: { description: "d" } });
    assert.equal((await call("DELETE", `/api/v1/ai/recommendations/${doomed.body.id}`)).status, 204);
    assert.equal((await call("GET", `/api/v1/ai/recommendations/${doomed.body.id}`)).status, 404);
  });

  test("approving an ai_recommendation applies the live record once; re-resolving is a no-op", async () => {
    const o = await offer();
    const rec = await call("POST", "/api/v1/ai/recommendations", { entityType: "offer", entityId: o.id, patch: { priority: 20 }, rationale: "r" });
    const req = await propose({ entityType: "ai_recommendation", action: "update", entityId: rec.body.id }, editor.apiKey);
    // The live record changes after the request: approval applies what it says now.
    await call("PUT", `/api/v1/ai/recommendations/${rec.body.id}`, { patch: { priority: 33 } });
    const res = await resolve(req.id, "approve", admin.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await call("GET", `/api/v1/offers/${o.id}`)).body.priority, 33);
    assert.equal((await call("GET", `/api/v1/ai/recommendations/${rec.body.id}`)).body.status, "applied");
    const again = await resolve(req.id, "approve", admin2.apiKey);
    assert.equal(again.status, 200);
    assert.equal(again.body.status, "approved");
    assert.equal((await call("GET", `/api/v1/offers/${o.id}`)).body.version, o.version + 1);
  });
});
