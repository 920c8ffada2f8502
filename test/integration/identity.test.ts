import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, TEST_INTERNAL_KEY, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant();
});
after(() => svc.stop());

/** A request with this tenant's admin key and a body sent as is. */
const sendRaw = (method: string, path: string, rawBody: string, headers: Record<string, string>) =>
  rest(svc.baseUrl, method, path, { key: tenant.apiKey, rawBody, headers });

describe("API keys (spec 2.3, 4.2)", () => {
  test("create shows the raw key once with a warning; the list shows prefixes of active keys only", async () => {
    const created = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "ingest" } });
    assert.equal(created.status, 201);
    assert.match(created.body.key, /^krn_[0-9a-f]{64}$/);
    assert.equal(created.body.prefix, created.body.key.slice(0, 12));
    assert.equal(created.body.prefix.length, "krn_".length + 8);
    assert.deepEqual(created.body.scopes, []);
    assert.equal(created.body.expiresAt, null);
    assert.ok(created.body.warning.length > 10);
    assert.ok(!Number.isNaN(Date.parse(created.body.createdAt)));

    const list = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey });
    assert.equal(list.status, 200);
    const row = list.body.data.find((k: any) => k.id === created.body.id);
    assert.equal(row.prefix, created.body.prefix);
    assert.equal(row.key, undefined, "listings never show key material beyond the prefix");
    assert.equal(JSON.stringify(list.body).includes(created.body.key), false);
    assert.ok("lastUsedAt" in row && "expiresAt" in row);
  });

  test("expiresAt takes ISO 8601 as the spec writes it: a date alone is its first instant, a zone-less time is UTC", async () => {
    for (const [given, stored] of [["2099-06-30", "2099-06-30T00:00:00Z"], ["2099-06-30T08:15", "2099-06-30T08:15:00Z"]]) {
      const created = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "dated", expiresAt: given } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.expiresAt, stored);
    }
  });

  test("expiresAt on a day that does not exist is the 400 of any bad timestamp, not the next month's day (spec 2.3)", async () => {
    const post = (expiresAt: string) => rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "d", expiresAt } });
    const unparseable = await post("2030-13-01T00:00:00Z");
    assert.equal(unparseable.status, 400);
    assert.match(unparseable.body.detail, /^expiresAt: /);
    for (const day of ["2030-02-30T00:00:00Z", "2030-04-31T00:00:00Z", "2031-02-29", "2031-02-29T10:00"]) {
      const res = await post(day);
      assert.equal(res.status, 400, `${day}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.detail, unparseable.body.detail, day);
    }
    for (const [given, stored] of [["2028-02-29T00:00:00Z", "2028-02-29T00:00:00Z"], ["2030-01-31", "2030-01-31T00:00:00Z"]]) {
      const res = await post(given);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.expiresAt, stored);
    }
    const leapSecond = await post("2030-06-30T23:59:60Z");
    assert.equal(leapSecond.status, 400, "a leap second is refused, as before");
  });

  test("a key's name holds 255 characters counted as code points, as offer names (spec 2.4): 255 emoji fit, 256 do not", async () => {
    const name = "\u{1F511}".repeat(255);
    const created = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name } });
    assert.equal(created.status, 201, JSON.stringify(created.body).slice(0, 200));
    assert.equal(created.body.name, name);
    const tooLong = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: `${name}\u{1F511}` } });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.detail, /^name: must be at most 255 characters/);
  });

  test("a data-plane key (no scopes) is refused on the control plane with 403 Forbidden", async () => {
    const created = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "dp" } });
    const res = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: created.body.key });
    assert.equal(res.status, 403);
    assert.equal(res.body.title, "Forbidden");
    assert.match(res.body.detail, /data plane/);
  });

  test("revoke takes effect at once, and the revoked key leaves the list", async () => {
    const created = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", {
      key: tenant.apiKey,
      body: { name: "short-lived", scopes: ["control-plane"] },
    });
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: created.body.key })).status, 200);
    const revoked = await rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${created.body.id}`, {
      key: tenant.apiKey,
      body: { reason: "rotated" },
    });
    assert.equal(revoked.status, 204);
    const after = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: created.body.key });
    assert.equal(after.status, 401);
    const list = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey });
    assert.equal(list.body.data.some((k: any) => k.id === created.body.id), false);
    assert.ok(list.body.data.every((k: any) => k.revokedAt === null && k.revokeReason === null), "a working key shows revokedAt: null");
    // Spec 2.3: revoked is a soft state with an optional reason; includeRevoked shows both.
    const all = await rest(svc.baseUrl, "GET", "/api/v1/api-keys?includeRevoked=true", { key: tenant.apiKey });
    const shown = all.body.data.find((k: any) => k.id === created.body.id);
    assert.equal(shown.revokeReason, "rotated");
    assert.ok(Math.abs(Date.parse(shown.revokedAt) - Date.now()) < 60_000, shown.revokedAt);
    assert.equal(all.body.total, list.body.total + 1);
  });

  test("bad input is a 400 naming the field, and writes nothing", async () => {
    const before = (await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey })).body.total;
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^name: is required/],
      [{ name: "x", scopes: ["root"] }, /^scopes: unknown scope "root"/],
      [{ name: "x", expiresAt: "2001-01-01T00:00:00Z" }, /^expiresAt: must be in the future/],
      [{ name: "x", expiresAt: "tomorrow" }, /^expiresAt: /],
      [{ name: 42 }, /^name: /],
      [{ name: "x", scopes: "control-plane" }, /^scopes: /],
    ];
    for (const [body, message] of cases) {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, message);
    }
    const malformed = await sendRaw("POST", "/api/v1/api-keys", "{not json", { "content-type": "application/json" });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.detail, "Invalid JSON");
    const after = (await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey })).body.total;
    assert.equal(after, before);
  });

  test("a foreign or unknown key id is a 404, and the foreign key keeps working", async () => {
    const other = await svc.createTenant("other");
    const theirs = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: other.apiKey, body: { name: "theirs" } });
    for (const id of [theirs.body.id, "not-a-uuid", "01a203f6-939c-77cb-95b9-000000000000"]) {
      const res = await rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${id}`, { key: tenant.apiKey, body: {} });
      assert.equal(res.status, 404, id);
    }
    const list = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: other.apiKey });
    assert.ok(list.body.data.some((k: any) => k.id === theirs.body.id));
    const missing = await rest(svc.baseUrl, "DELETE", "/api/v1/api-keys", { key: tenant.apiKey, body: {} });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /^id: is required/);
  });

  test("roles: editors and viewers cannot manage keys", async () => {
    for (const role of ["editor", "viewer"] as const) {
      const user = await svc.createUser(tenant.tenantId, role);
      const res = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: user.apiKey });
      assert.equal(res.status, 403, role);
      assert.equal(res.body.title, "Forbidden");
    }
  });
});

describe("authentication rules (spec 5.1, 5.4)", () => {
  test("missing or invalid credentials are 401; an API key sent as Bearer is 401", async () => {
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys")).status, 401);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: "krn_nope" })).status, 401);
    const bearer = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { bearer: tenant.apiKey });
    assert.equal(bearer.status, 401);
    assert.equal(bearer.body.title, "Unauthorized");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { bearer: "garbage.token.here" })).status, 401);
  });

  test("X-Tenant-Id is ignored when the key names the tenant", async () => {
    const other = await svc.createTenant("elsewhere");
    const res = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey, headers: { "x-tenant-id": other.tenantId } });
    assert.equal(res.status, 200);
    const mine = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey });
    assert.deepEqual(res.body, mine.body);
  });

  test("the internal server key names its tenant with X-Tenant-Id; unknown or missing tenant is 400", async () => {
    const ok = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: TEST_INTERNAL_KEY, headers: { "x-tenant-id": tenant.tenantId } });
    assert.equal(ok.status, 200);
    assert.ok(ok.body.total >= 1);
    const unknown = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", {
      key: TEST_INTERNAL_KEY,
      headers: { "x-tenant-id": "01a203f6-939c-77cb-95b9-000000000000" },
    });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.detail, /^X-Tenant-Id: unknown tenant/);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: TEST_INTERNAL_KEY })).status, 400);
  });

  test("CSRF guard: a state-changing API-key request needs JSON or X-Requested-With", async () => {
    const form = await sendRaw("POST", "/api/v1/api-keys", "name=x", { "content-type": "application/x-www-form-urlencoded" });
    assert.equal(form.status, 403);
    assert.equal(form.body.title, "Forbidden");
    const noType = await rest(svc.baseUrl, "DELETE", "/api/v1/api-keys?id=x", { key: tenant.apiKey });
    assert.equal(noType.status, 403);
    const withHeader = await sendRaw("POST", "/api/v1/api-keys", "name=x", { "content-type": "text/plain", "x-requested-with": "XMLHttpRequest" });
    assert.equal(withHeader.status, 415, "past the guard, a non-JSON body is an unsupported media type");
  });

  test("disabling a user rejects their keys at once (liveness); enabling restores them; role changes apply", async () => {
    const user = await svc.createUser(tenant.tenantId, "admin");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: user.apiKey })).status, 200);
    await svc.identity.updateUser(tenant.tenantId, user.userId, { disabled: true });
    const denied = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: user.apiKey });
    assert.equal(denied.status, 401);
    assert.equal(denied.body.title, "Unauthorized");
    await svc.identity.updateUser(tenant.tenantId, user.userId, { disabled: false });
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: user.apiKey })).status, 200);
    const row = await svc.identity.updateUser(tenant.tenantId, user.userId, { role: "viewer" });
    assert.equal(row.token_version, 4, "every change bumps tokenVersion");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: user.apiKey })).status, 403);
  });
});

describe("OAuth clients and tokens (spec 4.1, 7)", () => {
  async function client(scopes?: unknown, name?: string) {
    const res = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name, scopes } });
    assert.equal(res.status, 201);
    return res.body;
  }

  test("create: formats, default name and scopes, unknown scopes dropped", async () => {
    const c = await client();
    assert.match(c.clientId, /^kci_[0-9a-f]{32}$/);
    assert.match(c.clientSecret, /^kcs_[0-9a-f]{64}$/);
    assert.match(c.name, /^oauth-client-\d+$/);
    assert.deepEqual(c.scopes, ["read"]);
    assert.ok(c.warning && c.createdAt && c.id);
    assert.deepEqual((await client(["write", "bogus"])).scopes, ["write"]);
    assert.deepEqual((await client(["bogus"])).scopes, ["read"]);
    assert.deepEqual((await client(["admin", "read"], "named")).scopes, ["read", "admin"]);
  });

  test("list: active clients newest first without secrets; revoke is 204 and 404 across tenants", async () => {
    const a = await client(["read"], "a");
    const b = await client(["read"], "b");
    const list = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: tenant.apiKey });
    assert.equal(list.status, 200);
    const ids = list.body.data.map((c: any) => c.id);
    assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id), "newest first");
    const row = list.body.data.find((c: any) => c.id === a.id);
    assert.deepEqual(Object.keys(row).sort(), ["clientId", "clientIdPrefix", "createdAt", "id", "name", "revokedAt", "scopes"]);
    assert.equal(row.revokedAt, null);
    assert.equal(list.body.total, list.body.data.length);
    const other = await svc.createTenant("foreign");
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/oauth/clients?id=${a.id}`, { key: other.apiKey, body: {} })).status, 404);
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/oauth/clients?id=${a.id}`, { key: tenant.apiKey, body: {} })).status, 204);
    const after = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: tenant.apiKey });
    assert.equal(after.body.data.some((c: any) => c.id === a.id), false);
    // Spec 2.2: revokedAt is set on revoke; includeRevoked lists revoked clients with it.
    const all = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients?includeRevoked=true", { key: tenant.apiKey });
    const revoked = all.body.data.find((c: any) => c.id === a.id);
    assert.ok(Math.abs(Date.parse(revoked.revokedAt) - Date.now()) < 60_000, revoked.revokedAt);
    assert.equal(all.body.data.find((c: any) => c.id === b.id).revokedAt, null);
  });

  test("the list shows at most 1000 clients; total counts every active one", async () => {
    const many = await svc.createTenant("many-clients");
    await svc.sql(
      `INSERT INTO oauth_clients (tenant_id, id, name, client_id, secret_hash, scopes)
       SELECT $1::uuid, gen_random_uuid(), 'c' || n, 'kci_' || md5($1::text || n), 'x', '{read}' FROM generate_series(1, 1005) n`,
      [many.tenantId],
    );
    const list = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: many.apiKey });
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1000);
    assert.equal(list.body.total, 1005);
  });

  test("token: JSON and form bodies, claims, and a token whose client is revoked stops working", async () => {
    const c = await client(["write"]);
    const json = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: c.clientId, client_secret: c.clientSecret },
    });
    assert.equal(json.status, 200);
    assert.equal(json.body.token_type, "Bearer");
    assert.equal(json.body.expires_in, 3600);
    assert.equal(json.body.scope, "write");
    const claims = JSON.parse(Buffer.from(json.body.access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.sub, c.clientId);
    assert.equal(claims.tid, tenant.tenantId);
    assert.equal(claims.role, "editor");
    assert.deepEqual(claims.scopes, ["write"]);
    assert.equal(typeof claims.iss, "string");
    assert.equal(claims.exp - claims.iat, 3600);
    const header = JSON.parse(Buffer.from(json.body.access_token.split(".")[0], "base64url").toString());
    assert.equal(header.alg, "HS256");

    const form = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      rawBody: new URLSearchParams({ grant_type: "client_credentials", client_id: c.clientId, client_secret: c.clientSecret }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(form.status, 200);
    // RFC 6749 5.1: a token is not to be kept by caches; 3.1: a parameter sent twice is refused.
    assert.equal(json.headers.get("cache-control"), "no-store");
    assert.equal(form.headers.get("cache-control"), "no-store");
    const twice = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      rawBody: `grant_type=password&grant_type=client_credentials&client_id=${c.clientId}&client_secret=${c.clientSecret}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error, "invalid_request");
    assert.match(twice.body.error_description, /grant_type/);

    // An editor token reaches editor routes but not admin ones.
    const adminOnly = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { bearer: json.body.access_token });
    assert.equal(adminOnly.status, 403);
    const admin = await client(["admin"]);
    const adminToken = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: admin.clientId, client_secret: admin.clientSecret },
    });
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { bearer: adminToken.body.access_token })).status, 200);
    await rest(svc.baseUrl, "DELETE", `/api/v1/oauth/clients?id=${admin.id}`, { key: tenant.apiKey, body: {} });
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { bearer: adminToken.body.access_token })).status, 401);
    const reissue = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: admin.clientId, client_secret: admin.clientSecret },
    });
    assert.equal(reissue.status, 401);
    assert.equal(reissue.body.error, "invalid_client");
  });

  test("token errors use the OAuth shape", async () => {
    const c = await client();
    const cases: Array<[unknown, number, string]> = [
      [{ grant_type: "password", client_id: c.clientId, client_secret: c.clientSecret }, 400, "unsupported_grant_type"],
      [{ grant_type: "client_credentials", client_id: c.clientId }, 400, "invalid_request"],
      [{ grant_type: "client_credentials", client_secret: c.clientSecret }, 400, "invalid_request"],
      [{ grant_type: "client_credentials", client_id: c.clientId, client_secret: "kcs_wrong" }, 401, "invalid_client"],
      [{ grant_type: "client_credentials", client_id: "kci_unknown", client_secret: c.clientSecret }, 401, "invalid_client"],
    ];
    for (const [body, status, error] of cases) {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body });
      assert.equal(res.status, status, JSON.stringify(body));
      assert.equal(res.body.error, error);
    }
  });
});

describe("API keys minted with an admin OAuth token (spec 4.2, 5.3)", () => {
  const token = async (c: { clientId: string; clientSecret: string }) =>
    (await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: c.clientId, client_secret: c.clientSecret },
    })).body.access_token as string;

  test("the key acts as the admin who created the client, checked at minting time; the internal key still cannot mint", async () => {
    const admin = await svc.createUser(tenant.tenantId, "admin");
    const client = (await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: admin.apiKey, body: { name: "minter", scopes: ["admin"] } })).body;
    const bearer = await token(client);

    const minted = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { bearer, body: { name: "via-oauth", scopes: ["control-plane"] } });
    assert.equal(minted.status, 201, JSON.stringify(minted.body));
    assert.match(minted.body.key, /^krn_[0-9a-f]{64}$/);
    const [row] = await svc.sql("SELECT user_id FROM api_keys WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, minted.body.id]);
    assert.equal(row.user_id, admin.userId);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: minted.body.key })).status, 200);

    // A client made with that token stands for the same admin.
    const child = (await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { bearer, body: { name: "child", scopes: ["admin"] } })).body;
    const viaChild = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { bearer: await token(child), body: { name: "via-child" } });
    assert.equal(viaChild.status, 201, JSON.stringify(viaChild.body));

    await svc.identity.updateUser(tenant.tenantId, admin.userId, { role: "editor" });
    const demoted = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { bearer, body: { name: "after-demotion" } });
    assert.equal(demoted.status, 403);
    assert.match(demoted.body.detail, /no longer an admin/);
    // Nor can it mint itself a fresh admin client, which would mint keys in turn.
    const demotedClient = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { bearer, body: { name: "after-demotion", scopes: ["admin"] } });
    assert.equal(demotedClient.status, 403);
    assert.match(demotedClient.body.detail, /no longer an admin/);
    await svc.identity.updateUser(tenant.tenantId, admin.userId, { role: "admin", disabled: true });
    const disabled = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { bearer, body: { name: "after-disable" } });
    assert.equal(disabled.status, 403);
    assert.match(disabled.body.detail, /disabled or removed/);
    const disabledClient = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { bearer, body: { name: "after-disable" } });
    assert.equal(disabledClient.status, 403);

    const internal = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", {
      key: TEST_INTERNAL_KEY,
      headers: { "x-tenant-id": tenant.tenantId },
      body: { name: "infra" },
    });
    assert.equal(internal.status, 403);
    assert.match(internal.body.detail, /internal server key/);
  });
});

describe("bad input on every identity route: a 4xx naming the field, and nothing written", () => {
  const count = async (path: string) => (await rest(svc.baseUrl, "GET", path, { key: tenant.apiKey })).body.total as number;
  const raw = (method: string, path: string, rawBody: string, contentType = "application/json") =>
    sendRaw(method, path, rawBody, { "content-type": contentType, "x-requested-with": "test" });
  const oversize = JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) });

  test("POST /oauth/clients", async () => {
    const before = await count("/api/v1/oauth/clients");
    const cases: Array<[unknown, RegExp]> = [
      [{ name: 42 }, /^name: /],
      [{ scopes: "admin" }, /^scopes: /],
      [{ scopes: [1] }, /^scopes: /],
      [{ name: "x".repeat(256) }, /^name: must be at most 255 characters/],
      [{ name: "\u{1F511}".repeat(256) }, /^name: must be at most 255 characters/],
      [[], /^body: must be a JSON object/],
    ];
    for (const [body, message] of cases) {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, message);
    }
    assert.equal((await raw("POST", "/api/v1/oauth/clients", "{")).body.detail, "Invalid JSON");
    assert.equal((await raw("POST", "/api/v1/oauth/clients", oversize)).status, 413);
    assert.equal((await raw("POST", "/api/v1/oauth/clients", "name=x", "text/plain")).status, 415);
    assert.equal(await count("/api/v1/oauth/clients"), before);
    // Characters are code points (spec 2.4's "string 1-255", as for offer and key names): 255 emoji fit.
    const emojiName = "\u{1F511}".repeat(255);
    const fits = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name: emojiName } });
    assert.equal(fits.status, 201, JSON.stringify(fits.body).slice(0, 200));
    assert.equal(fits.body.name, emojiName);
  });

  test("DELETE /api-keys and DELETE /oauth/clients", async () => {
    const key = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "kept" } });
    const client = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name: "kept" } });
    const keysBefore = await count("/api/v1/api-keys");
    const clientsBefore = await count("/api/v1/oauth/clients");
    const cases: Array<[string, unknown, number, RegExp]> = [
      [`/api/v1/api-keys?id=${key.body.id}`, { reason: 7 }, 400, /^reason: /],
      [`/api/v1/api-keys?id=${key.body.id}`, { reason: "r".repeat(1001) }, 400, /^reason: must be at most 1000 characters/],
      [`/api/v1/api-keys?id=${key.body.id}`, { id: 5 }, 400, /^id: /],
      ["/api/v1/oauth/clients", {}, 400, /^id: is required/],
      ["/api/v1/oauth/clients?id=not-a-uuid", {}, 404, /not found/],
    ];
    for (const [path, body, status, message] of cases) {
      const res = await rest(svc.baseUrl, "DELETE", path, { key: tenant.apiKey, body });
      assert.equal(res.status, status, `${path} ${JSON.stringify(body)}`);
      assert.match(res.body.detail, message);
    }
    assert.equal((await raw("DELETE", `/api/v1/api-keys?id=${key.body.id}`, "{reason")).status, 400);
    assert.equal((await raw("DELETE", `/api/v1/api-keys?id=${key.body.id}`, oversize)).status, 413);
    assert.equal(await count("/api/v1/api-keys"), keysBefore);
    assert.equal(await count("/api/v1/oauth/clients"), clientsBefore);
    assert.ok((await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: tenant.apiKey })).body.data.some((c: any) => c.id === client.body.id));
  });

  test("POST /oauth/token answers in the OAuth shape, naming the field", async () => {
    const token = (rawBody: string, contentType = "application/json") =>
      rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { rawBody, headers: { "content-type": contentType } });
    const wrongType = await token(JSON.stringify({ grant_type: "client_credentials", client_id: 42, client_secret: "kcs_x" }));
    assert.equal(wrongType.status, 400);
    assert.equal(wrongType.body.error, "invalid_request");
    assert.match(wrongType.body.error_description, /^client_id: /);
    const malformed = await token("{");
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error, "invalid_request");
    const wrongMedia = await token("grant_type=client_credentials", "text/plain");
    assert.equal(wrongMedia.status, 415);
    assert.equal(wrongMedia.body.error, "invalid_request");
    const emptyForm = await token("", "application/x-www-form-urlencoded");
    assert.equal(emptyForm.status, 400);
    assert.match(emptyForm.body.error_description, /grant_type is required/);
  });
});
