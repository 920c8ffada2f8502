import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { CreateApiKeyRequestSchema } from "../../gen/decisioning/v1/identity_pb.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest, type RestResponse } from "../support/clients.js";

const BASE = "/api/v1/scim/v2";
const SCIM_JSON = "application/scim+json";

let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };
let scimKey: string;

interface Step {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  capture?: "id";
  expect: { status: number; body?: unknown; absent?: string[] };
  afterward?: "deactivated" | "active" | "deleted";
  afterwardRole?: string;
}

const fixture = (name: string): { source: string; steps: Step[] } =>
  JSON.parse(readFileSync(new URL(`../fixtures/scim/${name}.json`, import.meta.url), "utf8"));

/** A SCIM request as identity providers send it: Bearer key, application/scim+json. */
function scim(method: string, path: string, body?: unknown, bearer = scimKey, headers: Record<string, string> = {}): Promise<RestResponse> {
  return rest(svc.baseUrl, method, BASE + path, {
    bearer,
    rawBody: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? headers : { "content-type": SCIM_JSON, ...headers },
  });
}

async function mintKey(key: string, scopes: string[]): Promise<string> {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key, body: { name: `k-${scopes.join("-") || "data"}`, scopes } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.key;
}

/** A control-plane key of a directory user, minted as that user (what they would do once signed in). */
async function keyOf(tenantId: string, userId: string): Promise<string> {
  const created = await svc.identity.createApiKey(
    { tenantId, userId, actorName: "t", role: "viewer", principal: { kind: "internal" }, requestId: "t" },
    create(CreateApiKeyRequestSchema, { name: "own", scopes: ["control-plane"] }),
  );
  return created.key;
}

/** `expected` is contained in `actual`: objects by key, arrays element by element (in order). */
function assertContains(actual: unknown, expected: unknown, where: string): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${where}: length`);
    expected.forEach((e, i) => assertContains(actual[i], e, `${where}[${i}]`));
  } else if (expected && typeof expected === "object") {
    assert.ok(actual && typeof actual === "object", `${where}: expected an object, got ${JSON.stringify(actual)}`);
    for (const [k, v] of Object.entries(expected)) assertContains((actual as Record<string, unknown>)[k], v, `${where}.${k}`);
  } else assert.deepEqual(actual, expected, where);
}

const substitute = (value: unknown, vars: Record<string, string>): unknown =>
  JSON.parse(JSON.stringify(value ?? null).replace(/\{\{(\w+)\}\}/g, (_, v) => vars[v]));

/** Replays a recorded provisioning sequence, checking each answer and what it did to access. */
async function replay(name: string): Promise<Record<string, string>> {
  const vars: Record<string, string> = {};
  let userKey = "";
  for (const step of fixture(name).steps) {
    const path = substitute(step.path, vars) as string;
    const res = await scim(step.method, path, step.body === undefined ? undefined : substitute(step.body, vars));
    assert.equal(res.status, step.expect.status, `${name} / ${step.name}: ${JSON.stringify(res.body)}`);
    if (res.status !== 204) assert.match(res.headers.get("content-type") ?? "", /^application\/scim\+json/);
    if (step.expect.body) assertContains(res.body, substitute(step.expect.body, vars), `${name} / ${step.name}`);
    for (const attribute of step.expect.absent ?? []) assert.equal(res.body[attribute], undefined, `${step.name}: ${attribute} is never returned`);
    if (step.capture) {
      vars.id = res.body.id;
      assert.equal(res.headers.get("location"), `${BASE}/Users/${vars.id}`);
      userKey = await keyOf(tenant.tenantId, vars.id);
    }
    if (step.afterward) {
      // At once, on the next request: the user's own key follows the directory.
      const own = await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: userKey });
      assert.equal(own.status, step.afterward === "active" ? 200 : 401, `${step.name}: the user's key`);
    }
    if (step.afterwardRole) {
      const [row] = await svc.sql("SELECT role FROM users WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, vars.id]);
      assert.equal(row.role, step.afterwardRole, `${step.name}: role`);
    }
  }
  return vars;
}

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant();
  scimKey = await mintKey(tenant.apiKey, ["scim"]);
});
after(() => svc.stop());

describe("SCIM provisioning sequences recorded from the identity providers' documentation", () => {
  test("Okta: lookup, create, profile PUT, deactivate, reactivate", async () => {
    const { id } = await replay("okta-user-lifecycle");
    const [row] = await svc.sql("SELECT email, external_id, email_verified_at, disabled, user_name, given_name FROM users WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, id]);
    assert.equal(row.external_id, "00ujl29u0le5T6Aj10h7");
    assert.ok(row.email_verified_at, "a directory's user has a verified address");
    assert.equal(row.given_name, "Another");
    assert.equal(row.disabled, false);
  });

  test("Entra ID: query, create, capitalized Replace with filtered paths, string False, groups, delete", async () => {
    const { id } = await replay("entra-user-lifecycle");
    const [row] = await svc.sql("SELECT email, deleted_at, disabled, token_version FROM users WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, id]);
    assert.equal(row.email, "updatedEmail@microsoft.com");
    assert.ok(row.deleted_at, "DELETE keeps the row");
    assert.equal(row.disabled, true);
    const keys = await svc.sql("SELECT revoked_at FROM api_keys WHERE tenant_id = $1 AND user_id = $2", [tenant.tenantId, id]);
    assert.ok(keys.length > 0 && keys.every((k) => k.revoked_at), "DELETE revokes the user's keys");
    const audit = await svc.sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq", [tenant.tenantId, id]);
    const actions = audit.map((a) => a.action);
    assert.equal(actions[0], "create");
    assert.equal(actions.at(-1), "soft_delete");
    assert.ok(actions.filter((a) => a === "update").length >= 6, `every change is audited: ${actions}`);
  });
});

describe("SCIM authentication (spec 5.1)", () => {
  test("only a Bearer API key with the scim scope gets in; everything else is 401 in the SCIM error shape", async () => {
    const controlKey = await mintKey(tenant.apiKey, ["control-plane"]);
    const attempts: Array<[string, Record<string, string>]> = [
      ["no credentials", {}],
      ["scim key in X-API-Key", { "x-api-key": scimKey }],
      ["control-plane key as Bearer", { authorization: `Bearer ${controlKey}` }],
      ["control-plane key in X-API-Key", { "x-api-key": controlKey }],
      ["an unknown key", { authorization: "Bearer krn_0000000000000000000000000000000000000000000000000000000000000000" }],
      ["an OAuth-looking token", { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x" }],
    ];
    for (const [what, headers] of attempts) {
      const res = await rest(svc.baseUrl, "GET", `${BASE}/Users`, { headers });
      assert.equal(res.status, 401, what);
      assert.deepEqual(res.body.schemas, ["urn:ietf:params:scim:api:messages:2.0:Error"], what);
      assert.equal(res.body.status, "401", what);
    }
  });

  test("a scim key is not a control-plane key elsewhere, and a Bearer API key stays refused there", async () => {
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: scimKey })).status, 403);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { bearer: scimKey })).status, 401);
  });

  test("application/scim+json passes the CSRF guard's JSON rule on the generated routes too; a form does not", async () => {
    const scimJson = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, rawBody: JSON.stringify({ name: "via-scim-json" }), headers: { "content-type": SCIM_JSON } });
    assert.equal(scimJson.status, 201, JSON.stringify(scimJson.body));
    const form = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, rawBody: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(form.status, 403);
  });

  test("a scim key whose user is no admin is 403", async () => {
    const editor = await svc.createUser(tenant.tenantId, "editor");
    const editorScim = await keyOfScope(editor.userId, ["scim"]);
    const res = await scim("GET", "/Users", undefined, editorScim);
    assert.equal(res.status, 403);
    assert.equal(res.body.status, "403");
  });
});

async function keyOfScope(userId: string, scopes: string[]): Promise<string> {
  const created = await svc.identity.createApiKey(
    { tenantId: tenant.tenantId, userId, actorName: "t", role: "admin", principal: { kind: "internal" }, requestId: "t" },
    create(CreateApiKeyRequestSchema, { name: "scoped", scopes }),
  );
  return created.key;
}

describe("SCIM errors, lists and tenancy", () => {
  const user = (userName: string, extra: Record<string, unknown> = {}) => ({
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
    userName,
    emails: [{ value: userName, type: "work", primary: true }],
    active: true,
    ...extra,
  });

  test("a duplicate userName is 409 uniqueness, whatever its case, and writes nothing", async () => {
    assert.equal((await scim("POST", "/Users", user("dup@example.com"))).status, 201);
    const before = await svc.sql("SELECT count(*)::int AS n FROM users WHERE tenant_id = $1", [tenant.tenantId]);
    const res = await scim("POST", "/Users", user("DUP@example.com", { emails: [{ value: "other@example.com", primary: true }] }));
    assert.equal(res.status, 409);
    assert.equal(res.body.scimType, "uniqueness");
    assert.equal(res.body.status, "409");
    const afterwards = await svc.sql("SELECT count(*)::int AS n FROM users WHERE tenant_id = $1", [tenant.tenantId]);
    assert.equal(afterwards[0].n, before[0].n);
  });

  test("concurrent creates of one userName: one 201, the rest 409", async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => scim("POST", "/Users", user("race@example.com"))));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
  });

  test("filters the service cannot evaluate are 400 invalidFilter", async () => {
    for (const filter of ['userName xx "a"', "userName eq", "(userName eq \"a\"", 'title eq "boss"', 'foo eq "x"']) {
      const res = await scim("GET", `/Users?filter=${encodeURIComponent(filter)}`);
      assert.equal(res.status, 400, filter);
      assert.equal(res.body.scimType, "invalidFilter", filter);
    }
  });

  test("filters evaluate with SCIM semantics: caseless userName, value paths, and/or, pr", async () => {
    await scim("POST", "/Users", user("Filter.Me@example.com", { externalId: "ext-filter" }));
    const count = async (filter: string) => (await scim("GET", `/Users?filter=${encodeURIComponent(filter)}`)).body.totalResults;
    assert.equal(await count('userName eq "filter.me@EXAMPLE.com"'), 1);
    assert.equal(await count('emails[type eq "work" and value sw "filter.me"]'), 1);
    assert.equal(await count('externalId eq "ext-filter" and active eq true'), 1);
    assert.equal(await count('externalId eq "EXT-FILTER"'), 0, "externalId is case-exact");
    assert.equal(await count('userName eq "nobody@example.com" or externalId eq "ext-filter"'), 1);
    assert.ok((await count("externalId pr")) >= 1);
  });

  test("pagination: startIndex is 1-based, count caps the page, totalResults counts all matches", async () => {
    for (let i = 0; i < 5; i++) await scim("POST", "/Users", user(`page-${i}@example.com`));
    const filter = encodeURIComponent('userName sw "page-"');
    const first = await scim("GET", `/Users?filter=${filter}&startIndex=1&count=2`);
    assert.equal(first.body.totalResults, 5);
    assert.equal(first.body.itemsPerPage, 2);
    assert.equal(first.body.startIndex, 1);
    const last = await scim("GET", `/Users?filter=${filter}&startIndex=5&count=2`);
    assert.equal(last.body.itemsPerPage, 1);
    const all = [first, await scim("GET", `/Users?filter=${filter}&startIndex=3&count=2`), last].flatMap((r) => r.body.Resources.map((u: any) => u.userName));
    assert.deepEqual([...all].sort(), [0, 1, 2, 3, 4].map((i) => `page-${i}@example.com`));
    assert.equal((await scim("GET", `/Users?count=abc`)).body.scimType, "invalidValue");
    const none = await scim("GET", `/Users?filter=${filter}&count=0`);
    assert.equal(none.body.totalResults, 5);
    assert.deepEqual(none.body.Resources, []);
  });

  test("bad bodies are SCIM 400s naming the problem, never 500", async () => {
    const cases: Array<[unknown, string]> = [
      [{ schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"] }, "userName"],
      [user("x@example.com", { active: "sometimes" }), "active"],
      [user("no-address", { emails: [] }), "emails"],
      [user("y@example.com", { displayName: "n".repeat(300) }), "displayName"],
    ];
    for (const [body, field] of cases) {
      const res = await scim("POST", "/Users", body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.detail, new RegExp(field));
    }
    const notJson = await rest(svc.baseUrl, "POST", `${BASE}/Users`, { bearer: scimKey, rawBody: "{", headers: { "content-type": SCIM_JSON } });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.scimType, "invalidSyntax");
    const form = await rest(svc.baseUrl, "POST", `${BASE}/Users`, { bearer: scimKey, rawBody: "userName=a", headers: { "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(form.status, 415);
    const badPatch = await scim("PATCH", `/Users/${tenant.userId}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "jump", path: "active" }] });
    assert.equal(badPatch.status, 400);
    assert.equal((await scim("GET", "/Users/not-a-uuid")).status, 404);
    assert.equal((await scim("POST", "/Groups", { displayName: "admins" })).status, 400);
  });

  test("hostile requests are 4xx in the SCIM shape, never 500", async () => {
    const created = (await scim("POST", "/Users", user("hostile@example.com"))).body.id;
    const patch = (Operations: unknown) => ({ schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations });
    const cases: Array<[string, string, unknown]> = [
      ["GET", "/Users/%E0%A4%A", undefined],
      ["GET", "/Users/a/b", undefined],
      ["GET", "/Nope", undefined],
      ["PUT", "/Users", user("x@example.com")],
      ["PUT", `/Users/${created}`, [1, 2]],
      ["PUT", `/Users/${created}`, "text"],
      ["PATCH", `/Users/${created}`, { Operations: [] }],
      ["PATCH", `/Users/${created}`, patch("replace")],
      ["PATCH", `/Users/${created}`, patch([{ op: "replace", path: "id", value: "mine" }])],
      ["PATCH", `/Users/${created}`, patch([{ op: "replace", path: "emails[type eq", value: "a" }])],
      ["PATCH", `/Users/${created}`, patch([{ op: "add", path: "nosuch", value: 1 }])],
      ["PATCH", `/Users/${created}`, patch([{ op: "replace", path: "userName", value: 5 }])],
      ["PATCH", `/Users/${created}`, patch([{ op: "remove", path: "userName" }])],
      ["PATCH", "/Groups/admin", patch([{ op: "add", path: "members", value: [{ value: 5 }, { value: "not-a-uuid" }] }])],
      ["PATCH", "/Groups/root", patch([{ op: "add", path: "members", value: [] }])],
      ["PUT", "/Groups/editor", { displayName: 7 }],
      ["DELETE", "/Groups/admin", undefined],
      ["POST", "/ServiceProviderConfig", {}],
      ["GET", "/Schemas/urn:nope", undefined],
      ["GET", `/Users?startIndex=${"9".repeat(40)}`, undefined],
      ["GET", `/Users?filter=${encodeURIComponent("(".repeat(500))}`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const res = await scim(method, path, body);
      assert.ok(res.status >= 400 && res.status < 500, `${method} ${path} ${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body.schemas, ["urn:ietf:params:scim:api:messages:2.0:Error"], `${method} ${path}`);
    }
    const [row] = await svc.sql("SELECT user_name, disabled FROM users WHERE id = $1", [created]);
    assert.deepEqual({ ...row }, { user_name: "hostile@example.com", disabled: false }, "nothing half-written");
  });

  test("another tenant's users and groups are out of reach", async () => {
    const other = await svc.createTenant();
    const otherScim = await mintKey(other.apiKey, ["scim"]);
    const mine = await scim("POST", "/Users", user("isolated@example.com"));
    assert.equal((await scim("GET", `/Users/${mine.body.id}`, undefined, otherScim)).status, 404);
    assert.equal((await scim("PATCH", `/Users/${mine.body.id}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "replace", value: { active: false } }] }, otherScim)).status, 404);
    assert.equal((await scim("DELETE", `/Users/${mine.body.id}`, undefined, otherScim)).status, 404);
    const listed = await scim("GET", `/Users?filter=${encodeURIComponent('userName eq "isolated@example.com"')}`, undefined, otherScim);
    assert.equal(listed.body.totalResults, 0);
    const added = await scim("PATCH", "/Groups/admin", { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "add", path: "members", value: [{ value: mine.body.id }] }] }, otherScim);
    assert.equal(added.status, 400, "a foreign user in a body is 400");
    const [row] = await svc.sql("SELECT role, disabled FROM users WHERE id = $1", [mine.body.id]);
    assert.deepEqual({ ...row }, { role: "viewer", disabled: false });
  });

  test("a deactivated user's key is refused at once; the row's tokenVersion moves", async () => {
    const created = await scim("POST", "/Users", user("deactivate-me@example.com"));
    const key = await keyOf(tenant.tenantId, created.body.id);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { key })).status, 200);
    const [before] = await svc.sql("SELECT token_version FROM users WHERE id = $1", [created.body.id]);
    const off = await scim("PATCH", `/Users/${created.body.id}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "replace", path: "active", value: false }] });
    assert.equal(off.body.active, false);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { key })).status, 401);
    const [afterwards] = await svc.sql("SELECT token_version FROM users WHERE id = $1", [created.body.id]);
    assert.ok(afterwards.token_version > before.token_version);
  });

  test("deactivation bites at once on another process too, whose cache had the user", async () => {
    const other = await startTestService({ redisKeyPrefix: svc.config.redisKeyPrefix }, svc.config.databaseUrl!);
    try {
      const created = await scim("POST", "/Users", user("two-processes@example.com"));
      const key = await keyOf(tenant.tenantId, created.body.id);
      assert.equal((await rest(other.baseUrl, "GET", "/api/v1/offers", { key })).status, 200, "cached live on the other process");
      await scim("PATCH", `/Users/${created.body.id}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "Replace", path: "active", value: "False" }] });
      assert.equal((await rest(other.baseUrl, "GET", "/api/v1/offers", { key })).status, 401);
    } finally {
      await other.stop();
    }
  });

  test("POST of a deleted user's userName brings the same row back, enabled", async () => {
    const created = await scim("POST", "/Users", user("comeback@example.com"));
    assert.equal((await scim("DELETE", `/Users/${created.body.id}`)).status, 204);
    const again = await scim("POST", "/Users", user("comeback@example.com"));
    assert.equal(again.status, 201);
    assert.equal(again.body.id, created.body.id);
    assert.equal(again.body.active, true);
  });

  test("attributes and excludedAttributes project what is returned", async () => {
    const groups = await scim("GET", `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "admin"')}`);
    assert.equal(groups.body.Resources[0].id, "admin");
    assert.equal(groups.body.Resources[0].members, undefined);
    const admin = await scim("GET", `/Users/${tenant.userId}?attributes=userName`);
    assert.equal(admin.body.id, tenant.userId);
    assert.ok(admin.body.userName);
    assert.equal(admin.body.emails, undefined);
  });

  test("SCIM requests count in the tenant's default rate window; past it, a SCIM 429 with Retry-After", async () => {
    const limited = await svc.createTenant();
    await svc.identity.setTenantRateLimits(limited.tenantId, { default: { limit: 3, windowSeconds: 60 } });
    const key = await mintKey(limited.apiKey, ["scim"]); // the first request of the window
    for (let i = 0; i < 2; i++) assert.equal((await scim("GET", "/Users", undefined, key)).status, 200);
    const refused = await scim("GET", "/Users", undefined, key);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.status, "429");
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
  });

  test("discovery: ServiceProviderConfig, ResourceTypes and Schemas", async () => {
    const config = await scim("GET", "/ServiceProviderConfig");
    assert.equal(config.status, 200);
    assert.equal(config.body.patch.supported, true);
    assert.equal(config.body.filter.supported, true);
    assert.equal(config.body.bulk.supported, false);
    const types = await scim("GET", "/ResourceTypes");
    assert.deepEqual(types.body.Resources.map((r: any) => r.id).sort(), ["Group", "User"]);
    const schema = await scim("GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User");
    assert.equal(schema.status, 200);
    assert.equal(schema.body.id, "urn:ietf:params:scim:schemas:core:2.0:User");
  });

  test("groups: PUT sets a role's members exactly; those left out drop to viewer", async () => {
    const a = (await scim("POST", "/Users", user("group-a@example.com"))).body.id;
    const b = (await scim("POST", "/Users", user("group-b@example.com"))).body.id;
    await scim("PUT", "/Groups/editor", { schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"], displayName: "editor", members: [{ value: a }, { value: b }] });
    const put = await scim("PUT", "/Groups/editor", { schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"], displayName: "editor", members: [{ value: a }] });
    assert.equal(put.status, 200);
    assert.deepEqual(put.body.members.map((m: any) => m.value), [a]);
    const roles = await svc.sql("SELECT id, role FROM users WHERE id = ANY($1::uuid[])", [[a, b]]);
    assert.deepEqual(Object.fromEntries(roles.map((r) => [r.id, r.role])), { [a]: "editor", [b]: "viewer" });
    const okta = await scim("PATCH", "/Groups/editor", { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "remove", path: `members[value eq "${a}"]` }] });
    assert.deepEqual(okta.body.members ?? [], []);
  });
});
