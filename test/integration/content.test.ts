import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { ContentService } from "../../gen/decisioning/v1/content_pb.js";
import { startChildService } from "../support/child-service.js";

let svc: TestService;
type User = { userId: string; apiKey: string };
let admin: User & { tenantId: string };
let editor: User;
let editor2: User;
let viewer: User;
let other: User & { tenantId: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

/** A DELETE has no body, so it names itself as an API call for the CSRF guard. */
const call = (method: string, path: string, body?: unknown, key = admin.apiKey) =>
  rest(svc.baseUrl, method, path, {
    key,
    body: body ?? (method === "GET" || method === "DELETE" ? undefined : {}),
    headers: method === "DELETE" ? { "x-requested-with": "test" } : {},
  });


/** A new item by `key`'s user, asserting the 201. */
async function item(fields: Record<string, unknown> = {}, key = editor.apiKey) {
  const res = await call("POST", "/api/v1/content", { title: unique("Spring sale"), body: "<p>20% off</p>", ...fields }, key);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; title: string; status: string; version: number };
}

const move = (id: string, verb: string, key = editor.apiKey, body: unknown = {}) => call("POST", `/api/v1/content/${id}/${verb}`, body, key);

/** Draft → in_review (editor) → approved (editor2) → published (editor), asserting each move. */
async function publish(id: string) {
  for (const [verb, key] of [["submit", editor.apiKey], ["approve", editor2.apiKey], ["publish", editor.apiKey]] as const) {
    const res = await move(id, verb, key);
    assert.equal(res.status, 200, `${verb}: ${JSON.stringify(res.body)}`);
  }
}

/** A new OAuth client of the tenant with `scopes`, and a token it obtained. */
async function oauthClient(scopes: string[]): Promise<{ clientId: string; token: string }> {
  const c = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: admin.apiKey, body: { scopes } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const t = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: c.body.clientId, client_secret: c.body.clientSecret },
  });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  return { clientId: c.body.clientId, token: t.body.access_token };
}

/** The newest audit entry of the tenant for content items. */
async function lastAudit() {
  const [entry] = (await call("GET", "/api/v1/audit-logs?entityType=content_item&limit=1")).body.logs;
  return entry;
}

/** The newest change-history entry (spec 2.7) of one item with `action`. */
async function lastChange(id: string, action: string) {
  const res = await call("GET", `/api/v1/change-history?entityId=${id}&action=${action}&limit=1`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.changes[0];
}

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  editor = await svc.createUser(admin.tenantId, "editor");
  editor2 = await svc.createUser(admin.tenantId, "editor");
  viewer = await svc.createUser(admin.tenantId, "viewer");
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("create and read (spec 4.8)", () => {
  test("create is 201 in draft at version 1 with its first snapshot; the read has links and versions", async () => {
    const template = await item({ title: "Template" });
    const source = await item({ title: "Source" });
    const res = await call("POST", "/api/v1/content", { title: "  Welcome  ", body: "Hello", contentType: "html", parentTemplateId: template.id, sourceId: source.id }, editor.apiKey);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const created = res.body;
    assert.equal(created.title, "Welcome");
    assert.equal(created.status, "draft");
    assert.equal(created.version, 1);
    assert.equal(created.contentType, "html");
    assert.equal(created.createdBy, editor.userId);
    assert.equal(created.publishedAt, null);
    assert.equal(created.publishedVersion, null);

    const read = await call("GET", `/api/v1/content/${created.id}`, undefined, viewer.apiKey);
    assert.equal(read.status, 200);
    // Spec 4.8: the item's own fields at the top level, the links and versions beside them, and
    // the same item again under `item` for clients of the earlier nested shape.
    const { item: nested, parentTemplate, source: linkedSource, versions, ...top } = read.body;
    assert.deepEqual(top, created);
    assert.deepEqual(nested, created);
    assert.equal(read.body.status, "draft");
    assert.equal(read.body.version, 1);
    assert.equal(read.body.publishedAt, null);
    assert.ok(parentTemplate && linkedSource && versions);
    assert.deepEqual(read.body.parentTemplate, { id: template.id, title: "Template", status: "draft", version: 1 });
    assert.equal(read.body.source.id, source.id);
    assert.equal(read.body.versions.length, 1);
    assert.equal(read.body.versions[0].version, 1);
    assert.equal(read.body.versions[0].change, "create");
    assert.equal(read.body.versions[0].body, "Hello");

    const entry = await lastAudit();
    assert.equal(entry.action, "create");
    assert.equal(entry.entityId, created.id);
  });

  test("bad input is a 400 naming every field, and writes nothing", async () => {
    const before = (await svc.sql("SELECT count(*)::int AS c FROM content_items WHERE tenant_id = $1", [admin.tenantId]))[0].c;
    const missing = await call("POST", "/api/v1/content", {}, editor.apiKey);
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /title: is required/);
    assert.match(missing.body.detail, /body: is required/);
    const bad = await call("POST", "/api/v1/content", { title: "x".repeat(256), body: " ", contentType: "", parentTemplateId: "nope" }, editor.apiKey);
    assert.equal(bad.status, 400);
    for (const field of ["title", "body", "contentType", "parentTemplateId"]) assert.match(bad.body.detail, new RegExp(`${field}: `));
    const notJson = await rest(svc.baseUrl, "POST", "/api/v1/content", { key: editor.apiKey, rawBody: "{", headers: { "content-type": "application/json" } });
    assert.equal(notJson.status, 400);
    assert.equal((await svc.sql("SELECT count(*)::int AS c FROM content_items WHERE tenant_id = $1", [admin.tenantId]))[0].c, before);
  });

  test("viewers read but cannot write", async () => {
    const it = await item();
    assert.equal((await call("GET", `/api/v1/content/${it.id}`, undefined, viewer.apiKey)).status, 200);
    assert.equal((await call("POST", "/api/v1/content", { title: "t", body: "b" }, viewer.apiKey)).status, 403);
    assert.equal((await call("PUT", `/api/v1/content/${it.id}`, { title: "t" }, viewer.apiKey)).status, 403);
    assert.equal((await move(it.id, "submit", viewer.apiKey)).status, 403);
    assert.equal((await call("DELETE", `/api/v1/content/${it.id}`, undefined, viewer.apiKey)).status, 403);
  });
});

describe("workflow (spec 3.2)", () => {
  test("submit, approve by another user, publish: each move, its audit entry, and the published snapshot", async () => {
    const it = await item();
    const submitted = await move(it.id, "submit");
    assert.equal(submitted.status, 200);
    assert.equal(submitted.body.status, "in_review");
    assert.equal(submitted.body.submittedBy, editor.userId);
    assert.equal(submitted.body.version, 1, "a move is not a new version");
    assert.deepEqual((await lastAudit()).changes.workflow, { move: "submit", from: "draft", to: "in_review" });

    const self = await move(it.id, "approve");
    assert.equal(self.status, 403, "the submitter cannot approve");
    assert.match(self.body.detail, /submitter/);
    assert.equal((await call("GET", `/api/v1/content/${it.id}`)).body.item.status, "in_review");

    const approved = await move(it.id, "approve", admin.apiKey);
    assert.equal(approved.status, 200);
    assert.equal(approved.body.status, "approved");
    assert.equal(approved.body.approvedBy, admin.userId);
    assert.equal(approved.body.approvedVersion, 1);
    assert.equal((await lastAudit()).action, "approve");

    const published = await move(it.id, "publish");
    assert.equal(published.status, 200);
    assert.equal(published.body.status, "published");
    // Spec 3.2: publish records publishedAt and a version snapshot, which is the item's version.
    assert.equal(published.body.version, 2);
    assert.equal(published.body.publishedVersion, 2);
    assert.equal(published.body.approvedVersion, 1);
    assert.ok(Date.parse(published.body.publishedAt) > Date.now() - 60_000);
    const entry = await lastAudit();
    assert.equal(entry.action, "publish");
    assert.equal(entry.entityVersion, 2);
    // Spec 2.7: a publish carries version and notes (the request has no notes); the same on the audit entry and the change feed.
    const publishChanges = { workflow: { move: "publish", from: "approved", to: "published" }, version: 2, notes: "" };
    assert.deepEqual(entry.changes, publishChanges);
    const change = await lastChange(it.id, "publish");
    assert.deepEqual({ ...change.changes }, publishChanges);
    assert.equal(change.summary, `Published content item "${it.title}" version 2`);
    const versions = (await call("GET", `/api/v1/content/${it.id}/versions`)).body.data;
    assert.deepEqual(
      versions.map((v: any) => [v.version, v.change, v.revertedFrom, v.body, v.publishedAt]),
      [[2, "publish", 1, "<p>20% off</p>", published.body.publishedAt], [1, "create", null, "<p>20% off</p>", null]],
    );
    const read = (await call("GET", `/api/v1/content/${it.id}`)).body;
    assert.deepEqual([read.status, read.version, read.publishedVersion, read.publishedAt], ["published", 2, 2, published.body.publishedAt]);
    assert.equal(read.versions.length, 2);
  });

  test("an OAuth client of the editor or admin role may submit and approve, never both for one review", async () => {
    const writer = await oauthClient(["write"]);
    const adminClient = await oauthClient(["admin"]);
    const reader = await oauthClient(["read"]);
    const byToken = (id: string, verb: string, token: string) =>
      rest(svc.baseUrl, "POST", `/api/v1/content/${id}/${verb}`, { bearer: token, body: {} });

    // A user submits; a client approves.
    const a = await item();
    await move(a.id, "submit");
    assert.equal((await byToken(a.id, "approve", reader.token)).status, 403, "a viewer client cannot approve");
    const approved = await byToken(a.id, "approve", writer.token);
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.status, "approved");
    assert.equal(approved.body.approvedBy, `oauth_client:${writer.clientId}`);
    assert.equal((await lastAudit()).action, "approve");

    // A client submits: it cannot approve its own submission, another client or a user can.
    for (const approver of [{ token: adminClient.token }, { key: editor.apiKey }]) {
      const b = await item();
      const submitted = await byToken(b.id, "submit", writer.token);
      assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
      assert.equal(submitted.body.submittedBy, `oauth_client:${writer.clientId}`);
      const self = await byToken(b.id, "approve", writer.token);
      assert.equal(self.status, 403);
      assert.equal(self.body.reason, "SELF_APPROVAL");
      assert.equal((await call("GET", `/api/v1/content/${b.id}`)).body.status, "in_review");
      const other = approver.token ? await byToken(b.id, "approve", approver.token) : await move(b.id, "approve", approver.key);
      assert.equal(other.status, 200, JSON.stringify(other.body));
      assert.equal(other.body.approvedBy, approver.token ? `oauth_client:${adminClient.clientId}` : editor.userId);
      const published = await byToken(b.id, "publish", writer.token);
      assert.equal(published.status, 200, JSON.stringify(published.body));
      assert.equal(published.body.status, "published");
    }
  });

  test("reject needs a reason and sends the item back to draft with it", async () => {
    const it = await item();
    await move(it.id, "submit");
    const noReason = await move(it.id, "reject", editor2.apiKey, {});
    assert.equal(noReason.status, 400);
    assert.match(noReason.body.detail, /^reason: /);
    const rejected = await move(it.id, "reject", editor2.apiKey, { reason: "Tone is off" });
    assert.equal(rejected.status, 200);
    assert.equal(rejected.body.status, "draft");
    assert.equal(rejected.body.rejectionReason, "Tone is off");
    const entry = await lastAudit();
    assert.equal(entry.action, "reject");
    assert.equal(entry.changes.reason, "Tone is off");
    const resubmitted = await move(it.id, "submit");
    assert.equal(resubmitted.body.rejectionReason, null, "a new review starts clean");
  });

  test("every move outside the table is a 400 naming status, and changes nothing", async () => {
    const allowed: Record<string, string> = { submit: "draft", approve: "in_review", reject: "in_review", publish: "approved" };
    const path = ["draft", "in_review", "approved", "published", "archived"];
    const it = await item();
    for (const state of path) {
      for (const [verb, from] of Object.entries(allowed)) {
        if (from === state) continue;
        const res = await move(it.id, verb, editor2.apiKey, { reason: "r" });
        assert.equal(res.status, 400, `${verb} from ${state}`);
        assert.match(res.body.detail, new RegExp(`^status: cannot ${verb} a ${state} content item`));
      }
      assert.equal((await call("GET", `/api/v1/content/${it.id}`)).body.item.status, state);
      // Onwards along the path.
      if (state === "draft") await move(it.id, "submit");
      if (state === "in_review") await move(it.id, "approve", editor2.apiKey);
      if (state === "approved") await move(it.id, "publish");
      if (state === "published") assert.equal((await call("DELETE", `/api/v1/content/${it.id}`)).status, 204);
    }
  });

  test("update bumps the version and snapshots it in any state, keeping the state", async () => {
    const it = await item({ body: "v1" });
    await move(it.id, "submit");
    const res = await call("PUT", `/api/v1/content/${it.id}`, { body: "v2" }, editor.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.version, 2);
    assert.equal(res.body.status, "in_review");
    assert.equal(res.body.title, it.title);
    const versions = (await call("GET", `/api/v1/content/${it.id}/versions`)).body.data;
    assert.deepEqual(versions.map((v: any) => [v.version, v.body, v.change]), [[2, "v2", "update"], [1, "v1", "create"]]);
    const entry = await lastAudit();
    assert.equal(entry.action, "update");
    assert.equal(entry.entityVersion, 2);
    assert.equal(entry.before.body, "v1");
    assert.equal(entry.after.body, "v2");
    const empty = await call("PUT", `/api/v1/content/${it.id}`, {}, editor.apiKey);
    assert.equal(empty.status, 400);
    const self = await call("PUT", `/api/v1/content/${it.id}`, { parentTemplateId: it.id }, editor.apiKey);
    assert.equal(self.status, 400);
    assert.match(self.body.detail, /^parentTemplateId: /);
  });

  test("revert copies an earlier version into a new one in draft; later or missing versions are a 400", async () => {
    const it = await item({ body: "first" });
    await call("PUT", `/api/v1/content/${it.id}`, { body: "second" }, editor.apiKey);
    // Published as version 3, the snapshot of version 2's content.
    await publish(it.id);
    for (const version of [3, 4, 0]) {
      const res = await move(it.id, `revert/${version}`);
      assert.equal(res.status, 400, `revert to ${version}`);
      assert.match(res.body.detail, /^version: /);
    }
    const res = await move(it.id, "revert/1");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.version, 4);
    assert.equal(res.body.status, "draft");
    assert.equal(res.body.body, "first");
    assert.equal(res.body.publishedVersion, 3, "the published version keeps serving");
    const [newest] = (await call("GET", `/api/v1/content/${it.id}/versions`)).body.data;
    assert.deepEqual([newest.version, newest.change, newest.revertedFrom, newest.body], [4, "revert", 1, "first"]);
    const entry = await lastAudit();
    assert.equal(entry.action, "rollback");
    // Spec 2.7: a rollback carries fromVersion, toVersion, newVersion and notes, on the audit entry and the change feed.
    const rollbackChanges = { fromVersion: 3, toVersion: 1, newVersion: 4, notes: "" };
    assert.deepEqual(entry.changes, rollbackChanges);
    const change = await lastChange(it.id, "rollback");
    assert.deepEqual({ ...change.changes }, rollbackChanges);
    assert.equal(change.summary, `Rolled back content item "${it.title}" from version 3 to 1 (new version 4)`);
  });

  test("DELETE archives from any state with 204, again 204 without a second entry; revert brings it back to draft", async () => {
    for (const steps of [[], ["submit"], ["submit", "approve"]]) {
      const it = await item();
      for (const verb of steps) await move(it.id, verb, verb === "approve" ? editor2.apiKey : editor.apiKey);
      const res = await call("DELETE", `/api/v1/content/${it.id}`, undefined, editor.apiKey);
      assert.equal(res.status, 204);
      assert.equal((await call("GET", `/api/v1/content/${it.id}`)).body.item.status, "archived");
      const entry = await lastAudit();
      assert.equal(entry.action, "soft_delete");
      assert.equal(entry.entityId, it.id);
    }
    const it = await item();
    await call("PUT", `/api/v1/content/${it.id}`, { body: "two" }, editor.apiKey);
    await call("DELETE", `/api/v1/content/${it.id}`);
    const entries = async () => (await svc.sql("SELECT count(*)::int AS c FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [admin.tenantId, it.id]))[0].c;
    const count = await entries();
    assert.equal((await call("DELETE", `/api/v1/content/${it.id}`)).status, 204);
    assert.equal(await entries(), count);
    const back = await move(it.id, "revert/1");
    assert.equal(back.status, 200);
    assert.equal(back.body.status, "draft");
  });

  test("versions list holds the newest 100, the read the newest 20", async () => {
    const it = await item({ body: "b0" });
    for (let i = 1; i <= 104; i++) await call("PUT", `/api/v1/content/${it.id}`, { body: `b${i}` }, editor.apiKey);
    const versions = (await call("GET", `/api/v1/content/${it.id}/versions`, undefined, viewer.apiKey)).body.data;
    assert.equal(versions.length, 100);
    assert.equal(versions[0].version, 105);
    assert.equal(versions[99].version, 6);
    const read = (await call("GET", `/api/v1/content/${it.id}`)).body.versions;
    assert.deepEqual(read.map((v: any) => v.version), Array.from({ length: 20 }, (_, i) => 105 - i));
  });
});

describe("list (spec 4.8)", () => {
  test("cursor pages newest first, filtered by status and text", async () => {
    const tag = unique("zebra");
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await item({ title: `${tag} ${i}`, body: i % 2 ? "odd 100%_off" : "even" }));
    await move(made[1].id, "submit");
    await move(made[3].id, "submit");

    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 3; page++) {
      const res = await call("GET", `/api/v1/content?text=${tag}&limit=2${cursor ? `&cursor=${cursor}` : ""}`, undefined, viewer.apiKey);
      assert.equal(res.status, 200);
      seen.push(...res.body.data.map((d: any) => d.id));
      assert.equal(res.body.pagination.limit, 2);
      assert.equal(res.body.pagination.hasMore, page < 2);
      cursor = res.body.pagination.cursor;
    }
    assert.equal(cursor, null);
    assert.deepEqual(seen, made.map((m) => m.id).reverse());

    const inReview = await call("GET", `/api/v1/content?status=in_review&text=${tag.toUpperCase()}`);
    assert.deepEqual(inReview.body.data.map((d: any) => d.id), [made[3].id, made[1].id]);
    // The body matches too, and LIKE's wildcards are literal text.
    const literal = await call("GET", `/api/v1/content?text=${encodeURIComponent("100%_off")}`);
    assert.deepEqual(new Set(literal.body.data.map((d: any) => d.id)), new Set([made[1].id, made[3].id]));
    assert.equal((await call("GET", `/api/v1/content?text=${encodeURIComponent("1%f")}`)).body.data.length, 0);

    assert.equal((await call("GET", "/api/v1/content?limit=101")).body.pagination.limit, 100, "a limit over the maximum is served at the maximum");
    for (const [query, field] of [["status=live", "status"], ["limit=0", "limit"], ["cursor=abc", "cursor"]]) {
      const res = await call("GET", `/api/v1/content?${query}`);
      assert.equal(res.status, 400, query);
      assert.match(res.body.detail, new RegExp(`^${field}: `));
    }
  });
});

describe("tenancy", () => {
  test("another tenant's item is a 404 on every route, and a 400 as a link or a creative's content", async () => {
    const theirs = await item({}, other.apiKey);
    for (const [method, path, body] of [
      ["GET", `/api/v1/content/${theirs.id}`],
      ["GET", `/api/v1/content/${theirs.id}/versions`],
      ["PUT", `/api/v1/content/${theirs.id}`, { title: "mine" }],
      ["DELETE", `/api/v1/content/${theirs.id}`],
      ["POST", `/api/v1/content/${theirs.id}/submit`],
      ["POST", `/api/v1/content/${theirs.id}/approve`],
      ["POST", `/api/v1/content/${theirs.id}/reject`, { reason: "r" }],
      ["POST", `/api/v1/content/${theirs.id}/publish`],
      ["POST", `/api/v1/content/${theirs.id}/revert/1`],
    ] as Array<[string, string, unknown?]>) {
      assert.equal((await call(method, path, body)).status, 404, `${method} ${path}`);
    }
    assert.ok(!(await call("GET", "/api/v1/content?limit=100")).body.data.some((d: any) => d.id === theirs.id));
    const linked = await call("POST", "/api/v1/content", { title: "t", body: "b", sourceId: theirs.id }, editor.apiKey);
    assert.equal(linked.status, 400);
    assert.match(linked.body.detail, /^sourceId: unknown content item/);

    const offer = (await call("POST", "/api/v1/offers", { name: unique("offer") })).body;
    const creative = await call("POST", "/api/v1/creatives", { offerId: offer.id, name: unique("creative"), contentId: theirs.id });
    assert.equal(creative.status, 400);
    assert.match(creative.body.detail, /contentId: unknown or archived content item/);
    const [row] = await svc.sql("SELECT status FROM content_items WHERE tenant_id = $1 AND id = $2", [other.tenantId, theirs.id]);
    assert.equal(row.status, "draft");
  });
});

describe("Recommend serves published content", () => {
  test("a creative's content is the published version: unpublished edits wait, a new publish changes the answer, archive withdraws it", async () => {
    const it = await item({ title: "Banner", body: "Old banner", contentType: "html" });
    const offer = (await call("POST", "/api/v1/offers", { name: unique("served"), status: "active", priority: 100 })).body;
    const creative = await call("POST", "/api/v1/creatives", { offerId: offer.id, name: unique("banner"), contentId: it.id });
    assert.equal(creative.status, 201, JSON.stringify(creative.body));
    assert.equal(creative.body.contentId, it.id);

    const served = async () => {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: admin.apiKey, body: { customerId: unique("c"), limit: 50 } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const o = res.body.offers.find((x: any) => x.offerId === offer.id);
      assert.ok(o, "the offer is recommended");
      assert.equal(o.creativeId, creative.body.id);
      return o.content;
    };
    assert.equal(await served(), null, "nothing published yet");

    // Version 2 is the publish snapshot of version 1.
    await publish(it.id);
    assert.deepEqual(await served(), { contentId: it.id, version: 2, title: "Banner", body: "Old banner", contentType: "html" });

    await call("PUT", `/api/v1/content/${it.id}`, { body: "New banner" }, editor.apiKey);
    assert.equal((await served()).body, "Old banner", "an edit is not live until it is published");

    // Back to draft (4), the edit again (5), reviewed and published as 6.
    await move(it.id, "revert/1");
    await call("PUT", `/api/v1/content/${it.id}`, { body: "New banner" }, editor.apiKey);
    await publish(it.id);
    assert.deepEqual(await served(), { contentId: it.id, version: 6, title: "Banner", body: "New banner", contentType: "html" });

    assert.equal((await call("DELETE", `/api/v1/content/${it.id}`)).status, 204);
    assert.equal(await served(), null, "archived content is withdrawn");
    const refused = await call("POST", "/api/v1/creatives", { offerId: offer.id, name: unique("banner"), contentId: it.id });
    assert.equal(refused.status, 400, "an archived item cannot be newly named");
    const renamed = await call("PUT", "/api/v1/creatives", { id: creative.body.id, name: unique("renamed") });
    assert.equal(renamed.status, 200, "the creative's other fields stay editable while its item is archived");
    assert.equal(renamed.body.contentId, it.id);
    const cleared = await call("PUT", "/api/v1/creatives", { id: creative.body.id, contentId: null });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.equal(cleared.body.contentId, null);
  });
});

describe("editing reviewed content (spec 3.2, docs/content.md)", () => {
  test("submit is refused from approved and published, edited or not; a revert is the way back to review", async () => {
    const it = await item({ title: "Hero", body: "Live text" });
    const offer = (await call("POST", "/api/v1/offers", { name: unique("edited"), status: "active", priority: 100 })).body;
    const creative = (await call("POST", "/api/v1/creatives", { offerId: offer.id, name: unique("hero"), contentId: it.id })).body;
    const served = async () => {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: admin.apiKey, body: { customerId: unique("c"), limit: 50 } });
      const o = res.body.offers.find((x: any) => x.offerId === offer.id && x.creativeId === creative.id);
      assert.ok(o, JSON.stringify(res.body));
      return o.content?.body ?? null;
    };
    await publish(it.id);
    const edited = await call("PUT", `/api/v1/content/${it.id}`, { body: "Edited text" }, editor.apiKey);
    assert.deepEqual([edited.body.status, edited.body.version, edited.body.publishedVersion], ["published", 3, 2], "update keeps the state (spec 3.2)");
    // Spec 3.2: submit "must be draft", also with an edit since the review.
    const fromPublished = await move(it.id, "submit");
    assert.equal(fromPublished.status, 400);
    assert.equal(fromPublished.body.reason, "ILLEGAL_TRANSITION");
    assert.equal(fromPublished.body.detail, "status: cannot submit a published content item; it must be draft");
    assert.equal((await call("GET", `/api/v1/content/${it.id}`)).body.status, "published");
    assert.equal(await served(), "Live text");

    // The way back: revert to draft, apply the edit, review, publish.
    await move(it.id, "revert/2");
    await call("PUT", `/api/v1/content/${it.id}`, { body: "Edited text" }, editor.apiKey);
    assert.equal(await served(), "Live text", "the published version keeps serving through the draft");
    await publish(it.id);
    assert.equal(await served(), "Edited text");

    // From approved, edited after the approval: submit is refused too.
    await move(it.id, "revert/1");
    await move(it.id, "submit");
    await move(it.id, "approve", editor2.apiKey);
    const afterApproval = await call("PUT", `/api/v1/content/${it.id}`, { body: "Unreviewed text" }, editor.apiKey);
    assert.deepEqual([afterApproval.body.status, afterApproval.body.version, afterApproval.body.approvedVersion], ["approved", 8, 7]);
    const fromApproved = await move(it.id, "submit");
    assert.equal(fromApproved.status, 400);
    assert.equal(fromApproved.body.detail, "status: cannot submit a approved content item; it must be draft");

    // Publish makes the approved content live as a new version; the later edit stays in the history.
    const published = await move(it.id, "publish");
    assert.equal(published.status, 200, JSON.stringify(published.body));
    assert.deepEqual([published.body.version, published.body.publishedVersion, published.body.body], [9, 9, "Live text"]);
    assert.equal(await served(), "Live text");
    const [live, unreviewed] = (await call("GET", `/api/v1/content/${it.id}/versions`)).body.data;
    assert.deepEqual([live.version, live.change, live.revertedFrom, live.body], [9, "publish", 7, "Live text"]);
    assert.deepEqual([unreviewed.version, unreviewed.change, unreviewed.body], [8, "update", "Unreviewed text"]);
  });
});

describe("Recommend in another process", () => {
  test("a publish here changes what a second process serves, without a restart", async () => {
    const child = await startChildService(svc);
    try {
      const it = await item({ body: "first" });
      const offer = (await call("POST", "/api/v1/offers", { name: unique("elsewhere"), status: "active", priority: 100 })).body;
      const creative = (await call("POST", "/api/v1/creatives", { offerId: offer.id, name: unique("c"), contentId: it.id })).body;
      await publish(it.id);
      const servedThere = async () => {
        const res = await rest(child.baseUrl, "POST", "/api/v1/recommend", { key: admin.apiKey, body: { customerId: unique("c"), limit: 50 } });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.offers.find((o: any) => o.creativeId === creative.id)?.content?.body;
      };
      // The child's snapshot is loaded (and cached) with the first version.
      assert.equal(await servedThere(), "first");
      // Edits of a published item go through draft again (docs/content.md): edit, revert to the
      // published version, re-apply, review.
      await call("PUT", `/api/v1/content/${it.id}`, { body: "second" }, editor.apiKey);
      await move(it.id, "revert/1");
      await call("PUT", `/api/v1/content/${it.id}`, { body: "second" }, editor.apiKey);
      await publish(it.id);
      // Within a pub/sub hop.
      const deadline = Date.now() + 3_000;
      let body = await servedThere();
      while (body !== "second" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        body = await servedThere();
      }
      assert.equal(body, "second");
    } finally {
      await child.stop();
    }
  });
});

describe("doors, concurrency and reset", () => {
  test("gRPC and Connect give the same item and the same refusal as REST", async () => {
    const it = await item({ body: "door" });
    const headers = { "x-api-key": editor.apiKey };
    for (const client of [connectClient(ContentService, svc.baseUrl), grpcClient(ContentService, svc.grpcAddress)]) {
      const detail = await client.getContent({ id: it.id }, { headers });
      assert.deepEqual([detail.id, detail.body, detail.status, detail.version], [it.id, "door", "draft", 1]);
      assert.equal(detail.item?.body, "door");
      assert.equal(detail.versions.length, 1);
      const refused = await rpcError(client.approveContent({ id: it.id }, { headers }));
      assert.equal(refused.reason, "ILLEGAL_TRANSITION");
      assert.match(refused.message, /^status: cannot approve a draft content item/);
      const missing = await rpcError(client.getContent({ id: (await item({}, other.apiKey)).id }, { headers }));
      assert.equal(missing.reason, "NOT_FOUND");
    }
  });

  test("two approvers at once: one approval, one 400, one audit entry", async () => {
    const it = await item();
    await move(it.id, "submit");
    const results = await Promise.all([move(it.id, "approve", editor2.apiKey), move(it.id, "approve", admin.apiKey)]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 400]);
    const approvals = await svc.sql("SELECT count(*)::int AS c FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND action = 'approve'", [admin.tenantId, it.id]);
    assert.equal(approvals[0].c, 1);
    const updates = await Promise.all([1, 2, 3].map((i) => call("PUT", `/api/v1/content/${it.id}`, { body: `parallel ${i}` }, editor.apiKey)));
    assert.deepEqual(updates.map((r) => r.body.version).sort(), [2, 3, 4], "concurrent updates each get their own version");
  });

  test("a workspace reset removes the tenant's content and nothing of another tenant's", async () => {
    const t = await svc.createTenant("reset");
    const key = t.apiKey;
    const mine = await call("POST", "/api/v1/content", { title: "gone", body: "b" }, key);
    await call("PUT", `/api/v1/content/${mine.body.id}`, { body: "c" }, key);
    const theirs = await item({}, other.apiKey);
    const reset = await rest(svc.baseUrl, "POST", "/api/v1/workspace/reset", { key, body: { confirm: t.tenantId } });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.equal((await svc.sql("SELECT count(*)::int AS c FROM content_items WHERE tenant_id = $1", [t.tenantId]))[0].c, 0);
    assert.equal((await svc.sql("SELECT count(*)::int AS c FROM content_versions WHERE tenant_id = $1", [t.tenantId]))[0].c, 0);
    assert.equal((await call("GET", `/api/v1/content/${theirs.id}`, undefined, other.apiKey)).status, 200);
  });
});
