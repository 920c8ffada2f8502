import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
let admin: { tenantId: string; userId: string; apiKey: string };
let editor: { userId: string; apiKey: string };
let viewer: { userId: string; apiKey: string };
let other: { tenantId: string; userId: string; apiKey: string };

const get = (path: string, key = admin.apiKey) => rest(svc.baseUrl, "GET", path, { key });
let n = 0;
async function createOffer(body: Record<string, unknown> = {}, key = admin.apiKey, baseUrl = svc.baseUrl) {
  const res = await rest(baseUrl, "POST", "/api/v1/offers", { key, body: { name: `audited-${++n}-${Math.random().toString(36).slice(2, 7)}`, ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function sql(query: string, bind: unknown[] = []): Promise<any[]> {
  const [rows] = await svc.running.foundation.db.query(query, { bind });
  return rows as any[];
}

/** Recomputes an entry's hash from a JSON export row alone, exactly as docs/audit.md tells an auditor to. */
function independentHash(entry: Record<string, unknown>): string {
  const { integrityHash: _ignored, ...hashed } = entry;
  return createHash("sha256").update(canonicalize(hashed)!).digest("hex");
}

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  editor = await svc.createUser(admin.tenantId, "editor");
  viewer = await svc.createUser(admin.tenantId, "viewer");
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("GET /api/v1/audit-logs", () => {
  test("pages newest first with every field of spec 2.6, filtered by entityType; tenants never mix", async () => {
    const offer = await createOffer({ priority: 70 });
    await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: admin.apiKey, body: { id: offer.id, priority: 80 } });
    const res = await get("/api/v1/audit-logs?entityType=offer&limit=2&page=1");
    assert.equal(res.status, 200);
    assert.equal(res.body.page, 1);
    assert.equal(res.body.limit, 2);
    assert.ok(res.body.total >= 2);
    const [latest, previous] = res.body.logs;
    assert.equal(latest.action, "update");
    assert.equal(latest.entityId, offer.id);
    assert.equal(latest.entityType, "offer");
    assert.equal(latest.entityName, offer.name);
    assert.equal(latest.before.priority, 70);
    assert.equal(latest.after.priority, 80);
    assert.equal(latest.entityVersion, 2);
    assert.equal(latest.userId, admin.userId);
    assert.equal(typeof latest.userName, "string");
    assert.equal(latest.tenantId, admin.tenantId);
    assert.equal(typeof latest.requestId, "string");
    assert.match(latest.integrityHash, /^[0-9a-f]{64}$/);
    assert.equal(latest.prevHash, previous.integrityHash);
    assert.equal(previous.action, "create");
    assert.equal(previous.before, null);
    assert.ok(!Number.isNaN(Date.parse(latest.timestamp)));
    assert.deepEqual(previous.changes, {});

    const theirs = await get("/api/v1/audit-logs?limit=100", other.apiKey);
    assert.equal(theirs.status, 200);
    assert.ok(theirs.body.logs.every((l: any) => l.tenantId === other.tenantId));
    assert.ok(!theirs.body.logs.some((l: any) => l.entityId === offer.id));
  });

  test("one entry by id: the tenant's own only, admin only", async () => {
    const [entry] = (await get("/api/v1/audit-logs?limit=1")).body.logs;
    const one = await get(`/api/v1/audit-logs/${entry.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, entry);
    assert.equal((await get(`/api/v1/audit-logs/${entry.id}`, editor.apiKey)).status, 403);
    const other = await svc.createTenant("audit-one-other");
    assert.equal((await get(`/api/v1/audit-logs/${entry.id}`, other.apiKey)).status, 404, "another tenant's entry");
    assert.equal((await get("/api/v1/audit-logs/not-a-uuid")).status, 404);
  });

  test("admin only; bad paging is 400 naming the field; the log is immutable (405)", async () => {
    assert.equal((await get("/api/v1/audit-logs", editor.apiKey)).status, 403);
    assert.equal((await get("/api/v1/audit-logs", viewer.apiKey)).status, 403);
    const bad = await get("/api/v1/audit-logs?limit=0");
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^limit: /);
    assert.equal((await get("/api/v1/audit-logs?limit=101")).body.limit, 100, "over the maximum is served at the maximum");
    assert.match((await get("/api/v1/audit-logs?page=0")).body.detail, /^page: /);
    const before = (await sql("SELECT count(*)::int AS n FROM audit_log"))[0].n;
    const [entry] = (await get("/api/v1/audit-logs?limit=1")).body.logs;
    for (const path of ["/api/v1/audit-logs", `/api/v1/audit-logs/${entry.id}`]) {
      for (const method of ["PUT", "PATCH", "DELETE"]) {
        const res = await rest(svc.baseUrl, method, path, { key: admin.apiKey, body: {} });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get("allow"), "GET", `${method} ${path}`);
      }
    }
    assert.equal((await sql("SELECT count(*)::int AS n FROM audit_log"))[0].n, before);
  });
});

describe("tamper evidence", () => {
  test("16 concurrent writers in two server processes leave one linear chain that verifies", async () => {
    const tenant = await svc.createTenant("concurrent");
    const child = await startChildService(svc);
    try {
      await Promise.all(
        Array.from({ length: 16 }, (_, i) => createOffer({}, tenant.apiKey, i % 2 ? child.baseUrl : svc.baseUrl)),
      );
    } finally {
      await child.stop();
    }
    const rows = await sql("SELECT integrity_hash, prev_hash FROM audit_log WHERE tenant_id = $1 ORDER BY seq", [tenant.tenantId]);
    assert.equal(rows.length, 5 + 16, "five seeded outcome types and sixteen offers");
    rows.forEach((r, i) => assert.equal(r.prev_hash, i === 0 ? null : rows[i - 1].integrity_hash));
    const verify = await get("/api/v1/audit-logs/verify", tenant.apiKey);
    assert.equal(verify.status, 200);
    assert.deepEqual(verify.body, { intact: true, verified: 21, total: 21, scanned: 21 });
  });

  test("an edited entry is a hash_mismatch; a removed entry breaks the next link", async () => {
    const tenant = await svc.createTenant("tampered");
    const offers = [];
    for (let i = 0; i < 4; i++) offers.push(await createOffer({}, tenant.apiKey));
    assert.equal((await get("/api/v1/audit-logs/verify", tenant.apiKey)).body.intact, true);

    const [edited] = await sql(
      "UPDATE audit_log SET entity_name = 'forged' WHERE tenant_id = $1 AND entity_id = $2 RETURNING id",
      [tenant.tenantId, offers[1].id],
    );
    const broken = await get("/api/v1/audit-logs/verify", tenant.apiKey);
    assert.equal(broken.body.intact, false);
    assert.equal(broken.body.brokenAtId, edited.id);
    assert.equal(broken.body.brokenReason, "hash_mismatch");
    assert.equal(broken.body.verified, 6, "five outcome types and the first offer come before it");
    assert.equal(broken.body.scanned, 7);
    assert.equal(broken.body.total, 9);
    // The last two entries alone still verify: the break lies before them.
    assert.deepEqual((await get("/api/v1/audit-logs/verify?limit=2", tenant.apiKey)).body, { intact: true, verified: 2, total: 9, scanned: 2 });

    await sql("UPDATE audit_log SET entity_name = $3 WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, edited.id, offers[1].name]);
    assert.equal((await get("/api/v1/audit-logs/verify", tenant.apiKey)).body.intact, true);
    await sql("DELETE FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [tenant.tenantId, offers[2].id]);
    const [next] = await sql("SELECT id FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [tenant.tenantId, offers[3].id]);
    const relinked = await get("/api/v1/audit-logs/verify", tenant.apiKey);
    assert.equal(relinked.body.brokenReason, "chain_link_mismatch");
    assert.equal(relinked.body.brokenAtId, next.id);
    assert.equal((await get("/api/v1/audit-logs/verify?limit=1", tenant.apiKey)).body.brokenReason, "chain_link_mismatch");
    assert.equal((await get("/api/v1/audit-logs/verify?limit=0", tenant.apiKey)).status, 400);
  });

  test("anyone can verify a JSON export with SHA-256 over RFC 8785, as documented", async () => {
    await createOffer({ metadata: { nested: { b: 1.5, a: [true, null, "é"] } }, tags: ["x"] });
    const res = await get("/api/v1/audit-export?format=json");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^application\/json/);
    const rows = res.body.data as Array<Record<string, any>>;
    assert.equal(res.body.total, rows.length);
    assert.ok(rows.length > 5);
    rows.forEach((row, i) => {
      assert.equal(independentHash(row), row.integrityHash);
      assert.equal(row.prevHash, i === 0 ? null : rows[i - 1].integrityHash);
    });
  });
});

describe("GET and POST /api/v1/audit-export", () => {
  test("csv is an attachment; soc2 carries the verification and the actor fields; filters apply", async () => {
    const offer = await createOffer();
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${offer.id}`, { key: admin.apiKey, headers: { "x-requested-with": "test" } });
    const csv = await get("/api/v1/audit-export?format=csv&entityType=offer");
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get("content-type")!, /^text\/csv/);
    assert.match(csv.headers.get("content-disposition")!, /^attachment; filename="audit-log-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = (csv.body as string).trim().split("\r\n");
    assert.match(lines[0], /^id,timestamp,action,entityType,entityId,entityName/);
    assert.ok(lines.slice(1).every((l) => l.includes(",offer,")));
    assert.ok(lines.some((l) => l.includes(",soft_delete,offer,")));

    const deletes = await get("/api/v1/audit-export?action=soft_delete&entityType=offer");
    assert.ok(deletes.body.data.length >= 1);
    assert.ok(deletes.body.data.every((r: any) => r.action === "soft_delete"));

    const soc2 = await get("/api/v1/audit-export?format=soc2&limit=3&offset=1");
    assert.equal(soc2.status, 200);
    assert.match(soc2.headers.get("content-disposition")!, /^attachment; filename="audit-soc2-.*\.json"$/);
    assert.equal(soc2.body.format, "soc2");
    assert.equal(soc2.body.integrity.intact, true);
    assert.equal(soc2.body.entries.length, 3);
    assert.equal(soc2.body.summary.offset, 1);
    const e = soc2.body.entries[0];
    for (const k of ["timestamp", "actor", "action", "entityType", "entityId", "changedFields", "requestId", "integrityHash"]) assert.ok(k in e, k);

    const future = new Date(Date.now() + 3_600_000).toISOString();
    const empty = await get(`/api/v1/audit-export?startDate=${encodeURIComponent(future)}`);
    assert.deepEqual(empty.body.data, []);
    assert.equal(empty.body.total, 0);
  });

  test("dates as ISO 8601 allows them (spec: date-only, zone-less as UTC); a date-only endDate covers that whole day", async () => {
    const tenant = await svc.createTenant("dated");
    await createOffer({}, tenant.apiKey);
    const [entry] = (await get("/api/v1/audit-export?entityType=offer", tenant.apiKey)).body.data;
    const at = Date.parse(entry.timestamp);
    const day = (offsetDays: number) => new Date(at + offsetDays * 86_400_000).toISOString().slice(0, 10);
    const zoneless = (ms: number) => new Date(ms).toISOString().slice(0, 19);
    const found = async (query: string) => {
      const res = await get(`/api/v1/audit-export?entityType=offer&${query}`, tenant.apiKey);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      return res.body.data.map((r: any) => r.id);
    };
    assert.deepEqual(await found(`startDate=${day(0)}`), [entry.id]);
    assert.deepEqual(await found(`startDate=${day(1)}`), []);
    assert.deepEqual(await found(`startDate=${day(0)}&endDate=${day(0)}`), [entry.id], "endDate=<that day> includes the whole day");
    assert.deepEqual(await found(`endDate=${day(-1)}`), []);
    assert.deepEqual(await found(`startDate=${zoneless(at - 60_000)}`), [entry.id], "a zone-less time is UTC");
    assert.deepEqual(await found(`startDate=${zoneless(at + 60_000)}`), []);
    assert.deepEqual(await found(`startDate=${encodeURIComponent(zoneless(at - 60_000) + "+0000")}`), [entry.id], "an offset without a colon");
    assert.deepEqual(await found(`endDate=${zoneless(at - 60_000).slice(0, 16)}`), [], "minutes without seconds");

    const verified = await rest(svc.baseUrl, "POST", "/api/v1/audit-export", { key: tenant.apiKey, body: { action: "verify_integrity", startDate: day(0), endDate: day(0) } });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assert.equal(verified.body.intact, true);
    assert.ok(verified.body.total >= 1);
    const since = await get(`/api/v1/change-history?entityId=${entry.entityId}&since=${day(0)}`, tenant.apiKey);
    assert.equal(since.status, 200, JSON.stringify(since.body));
    assert.equal(since.body.total, 1);
    assert.equal((await get(`/api/v1/change-history?entityId=${entry.entityId}&since=${zoneless(at + 60_000)}`, tenant.apiKey)).body.total, 0);
    for (const bad of ["2025-13-01", "2025-01-01T25:00", "01/02/2025"]) {
      const res = await get(`/api/v1/audit-export?startDate=${encodeURIComponent(bad)}`, tenant.apiKey);
      assert.equal(res.status, 400, bad);
      assert.match(res.body.detail, /^startDate: /, bad);
    }
  });

  test("the export's action=delete finds soft deletes too (its filter offers only create/update/delete); the change feed matches delete and soft_delete exactly", async () => {
    const tenant = await svc.createTenant("deleting");
    const offer = await createOffer({}, tenant.apiKey);
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${offer.id}`, { key: tenant.apiKey, headers: { "x-requested-with": "test" } });
    const exported = await get("/api/v1/audit-export?action=delete", tenant.apiKey);
    assert.deepEqual(exported.body.data.map((r: any) => [r.action, r.entityId]), [["soft_delete", offer.id]]);
    assert.equal(exported.body.total, 1);
    const history = await get(`/api/v1/change-history?action=delete`, tenant.apiKey);
    assert.deepEqual(history.body.changes, [], "spec 4.5 lists delete and soft_delete as separate change-history filters");
    const soft = await get(`/api/v1/change-history?action=soft_delete`, tenant.apiKey);
    assert.deepEqual(soft.body.changes.map((c: any) => [c.action, c.entityId]), [["soft_delete", offer.id]]);
    assert.equal((await get(`/api/v1/audit-export?action=update`, tenant.apiKey)).body.total, 0);
  });

  test("bad export parameters are 400 naming the field", async () => {
    for (const [query, field] of [
      ["format=xml", "format"],
      ["limit=0", "limit"],
      ["offset=-1", "offset"],
      ["action=explode", "action"],
      ["startDate=yesterday", "startDate"],
    ]) {
      const res = await get(`/api/v1/audit-export?${query}`, other.apiKey);
      assert.equal(res.status, 400, query);
      assert.match(res.body.detail, new RegExp(`^${field}: `), query);
    }
  });

  test("POST verify_integrity over a date range", async () => {
    const start = new Date().toISOString();
    await createOffer();
    const res = await rest(svc.baseUrl, "POST", "/api/v1/audit-export", { key: admin.apiKey, body: { action: "verify_integrity", startDate: start } });
    assert.equal(res.status, 200);
    assert.equal(res.body.intact, true);
    assert.equal(res.body.total, 1);
    assert.equal(res.body.verified, 1);
    const bad = await rest(svc.baseUrl, "POST", "/api/v1/audit-export", { key: admin.apiKey, body: { action: "export" } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^action: /);
    assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/audit-export", { key: editor.apiKey, body: { action: "verify_integrity" } })).status, 403);
  });

  test("the export is limited to 10 requests per 60 s per tenant", async () => {
    const tenant = await svc.createTenant("exporter");
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push((await get("/api/v1/audit-export?limit=1", tenant.apiKey)).status);
    assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
    const limited = await get("/api/v1/audit-export?limit=1", tenant.apiKey);
    assert.equal(limited.body.error, "Too Many Requests");
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    // Other routes keep their own budget.
    assert.equal((await get("/api/v1/audit-logs?limit=1", tenant.apiKey)).status, 200);
  });
});

describe("GET /api/v1/change-history", () => {
  test("summaries from the audit log, filters, since inclusive, pages up to 200", async () => {
    const offer = await createOffer({ priority: 10 });
    await rest(svc.baseUrl, "PUT", "/api/v1/offers", { key: editor.apiKey, body: { id: offer.id, priority: 20, status: "active" } });
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${offer.id}`, { key: editor.apiKey, headers: { "x-requested-with": "test" } });
    const res = await get(`/api/v1/change-history?entityId=${offer.id}`, editor.apiKey);
    assert.equal(res.status, 200);
    assert.equal(res.body.total, 3);
    assert.deepEqual(res.body.changes.map((c: any) => c.action), ["soft_delete", "update", "create"]);
    const [deleted, updated, created] = res.body.changes;
    assert.equal(created.summary, `Created offer "${offer.name}"`);
    assert.equal(updated.summary, `Updated offer "${offer.name}": status, priority`);
    assert.deepEqual(updated.changes.changedFields, ["status", "priority"]);
    assert.equal(deleted.summary, `Deleted offer "${offer.name}"`);
    assert.equal(updated.user.id, editor.userId);
    assert.equal(typeof updated.user.name, "string");
    assert.equal(updated.entityName, offer.name);

    const since = await get(`/api/v1/change-history?entityId=${offer.id}&since=${encodeURIComponent(updated.timestamp)}`, editor.apiKey);
    assert.deepEqual(since.body.changes.map((c: any) => c.action), ["soft_delete", "update"]);
    const creates = await get(`/api/v1/change-history?entityId=${offer.id}&action=create`, editor.apiKey);
    assert.deepEqual(creates.body.changes.map((c: any) => c.id), [created.id]);

    const seeded = await get("/api/v1/change-history?entityType=outcome_type&limit=200", editor.apiKey);
    assert.equal(seeded.body.limit, 200);
    assert.ok(seeded.body.changes.every((c: any) => c.user.id === null && c.user.name === "system"));
    assert.equal((await get("/api/v1/change-history?limit=201", editor.apiKey)).body.limit, 200);
    assert.equal((await get("/api/v1/change-history?limit=-1", editor.apiKey)).status, 400);
    assert.equal((await get("/api/v1/change-history", viewer.apiKey)).status, 403);
    assert.equal((await get(`/api/v1/change-history?entityId=${offer.id}`, other.apiKey)).body.total, 0);
  });

  test("a tenant settings change is audited with before and after, and summarized", async () => {
    const tenant = await svc.createTenant("settings-audit");
    const put = await rest(svc.baseUrl, "PUT", "/api/v1/tenant-settings", { key: tenant.apiKey, body: { requirePublishApproval: true } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const [entry] = (await get("/api/v1/audit-logs?entityType=tenant_settings", tenant.apiKey)).body.logs;
    assert.equal(entry.action, "update");
    assert.equal(entry.entityId, tenant.tenantId);
    assert.equal(entry.before.requirePublishApproval, false);
    assert.equal(entry.after.requirePublishApproval, true);
    const [change] = (await get("/api/v1/change-history?entityType=tenant_settings", tenant.apiKey)).body.changes;
    assert.match(change.summary, /requirePublishApproval/);
    const bad = await rest(svc.baseUrl, "PUT", "/api/v1/tenant-settings", { key: tenant.apiKey, body: { decisionTraceSampleRate: 2 } });
    assert.equal(bad.status, 400);
    assert.equal((await get("/api/v1/audit-logs?entityType=tenant_settings", tenant.apiKey)).body.total, 1, "a refused change is not audited");
  });

  test("cascaded creative deletes carry their reason", async () => {
    const offer = await createOffer();
    const creative = await rest(svc.baseUrl, "POST", "/api/v1/creatives", { key: admin.apiKey, body: { offerId: offer.id, name: "banner" } });
    assert.equal(creative.status, 201);
    await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${offer.id}`, { key: admin.apiKey, headers: { "x-requested-with": "test" } });
    const res = await get(`/api/v1/change-history?entityId=${creative.body.id}&action=soft_delete`);
    assert.equal(res.body.total, 1);
    assert.equal(res.body.changes[0].changes.reason, `cascade from offer ${offer.id}`);
    assert.equal(res.body.changes[0].summary, `Deleted creative "banner" (cascade from offer ${offer.id})`);
  });
});
