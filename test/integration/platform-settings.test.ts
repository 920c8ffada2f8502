import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startTestService, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { PlatformSettingsService } from "../../gen/decisioning/v1/platform_settings_pb.js";
import { runCli } from "../support/server-process.js";
import { createTestDatabase } from "../support/database.js";

const K1 = { id: "k1", secret: "first-settings-key-0123456789abcdef" };
const K2 = { id: "k2", secret: "second-settings-key-0123456789abcdef" };

async function sql<T = any>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, values)).rows as T[];
  } finally {
    await c.end();
  }
}

const EMAIL_SETTINGS = {
  category: "email",
  settings: [
    { key: "smtp_host", value: "smtp.example.com", encrypted: false, description: "relay" },
    { key: "smtp_password", value: "p@ss-w0rd-in-clear", encrypted: true, description: "relay password" },
  ],
};

describe("platform settings (spec 2.13, 4.9)", () => {
  let svc: TestService;
  let owner: { tenantId: string; apiKey: string };
  before(async () => {
    // The owner is made the way the CLI's --platform-owner makes it.
    const databaseUrl = await createTestDatabase();
    svc = await startTestService({ settingsKeys: [K1] }, databaseUrl);
    owner = await svc.identity.createTenant("platform", { platformOwner: true });
  });
  after(() => svc.stop());

  test("a second platform owner is refused with 409", async () => {
    await assert.rejects(svc.identity.createTenant("usurper", { platformOwner: true }), (e: any) => e.reason === "PLATFORM_OWNER_EXISTS" && e.code === "ALREADY_EXISTS");
  });

  test("only admins of the platform-owner tenant: another tenant's admin and the owner's editor get 403", async () => {
    const other = await svc.createTenant();
    const editor = await svc.createUser(owner.tenantId, "editor");
    for (const key of [other.apiKey, editor.apiKey]) {
      const get = await rest(svc.baseUrl, "GET", "/api/v1/platform-settings", { key });
      assert.equal(get.status, 403, JSON.stringify(get.body));
      const put = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", { key, body: EMAIL_SETTINGS });
      assert.equal(put.status, 403);
    }
    const rows = await sql(svc.config.databaseUrl!, "SELECT count(*)::int AS n FROM platform_settings");
    assert.equal(rows[0].n, 0, "a refused PUT wrote nothing");
  });

  test("PUT answers {ok:true}; GET gives the flat and the grouped forms, encrypted values as ****", async () => {
    const put = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", { key: owner.apiKey, body: EMAIL_SETTINGS });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body, { ok: true });
    const flat = await rest(svc.baseUrl, "GET", "/api/v1/platform-settings?category=email", { key: owner.apiKey });
    assert.deepEqual(flat.body, { smtp_host: "smtp.example.com", smtp_password: "****" });
    const grouped = await rest(svc.baseUrl, "GET", "/api/v1/platform-settings", { key: owner.apiKey });
    assert.deepEqual(grouped.body, {
      email: [
        { key: "smtp_host", value: "smtp.example.com", encrypted: false, description: "relay" },
        { key: "smtp_password", value: "****", encrypted: true, description: "relay password" },
      ],
      sms: [],
      push: [],
    });
    // The process itself reads the plaintext.
    assert.equal((await svc.running.services.notifications.platformSettings.settings("email")).smtp_password, "p@ss-w0rd-in-clear");
  });

  test("Connect and gRPC answer the same object, and the same 403", async () => {
    const headers = { headers: { "x-api-key": owner.apiKey } };
    const viaConnect = await connectClient(PlatformSettingsService, svc.baseUrl).getPlatformSettings({ category: "email" }, headers);
    const viaGrpc = await grpcClient(PlatformSettingsService, svc.grpcAddress).getPlatformSettings({ category: "email" }, headers);
    for (const s of [viaConnect, viaGrpc]) assert.deepEqual(s.fields.smtp_password.kind, { case: "stringValue", value: "****" });
    const other = await svc.createTenant();
    const refused = await rpcError(grpcClient(PlatformSettingsService, svc.grpcAddress).getPlatformSettings({}, { headers: { "x-api-key": other.apiKey } }));
    assert.equal(refused.reason, "NOT_PLATFORM_OWNER");
    assert.equal(refused.code, 7, "PERMISSION_DENIED");
  });

  test("encrypted at rest: the row holds ciphertext and its key id, never the plaintext", async () => {
    const [row] = await sql(svc.config.databaseUrl!, "SELECT value, encrypted, key_id FROM platform_settings WHERE category = 'email' AND key = 'smtp_password'");
    assert.equal(row.encrypted, true);
    assert.equal(row.key_id, "k1");
    assert.ok(!row.value.includes("p@ss"), "no plaintext in the row");
    assert.ok(Buffer.from(row.value, "base64").length >= 12 + 16 + "p@ss-w0rd-in-clear".length, "IV, tag and ciphertext");
    const audit = await sql(svc.config.databaseUrl!, "SELECT after::text AS after FROM audit_log WHERE tenant_id = $1 AND entity_type = 'platform_settings'", [owner.tenantId]);
    assert.ok(audit.length >= 1, "the change is audit-logged");
    assert.ok(audit.every((a) => !a.after.includes("p@ss")), "and the log holds no secret");
  });

  test("**** sent back for an encrypted key keeps its value", async () => {
    const put = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", {
      key: owner.apiKey,
      body: { category: "email", settings: [{ key: "smtp_password", value: "****", encrypted: true, description: "still the relay password" }] },
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal((await svc.running.services.notifications.platformSettings.settings("email")).smtp_password, "p@ss-w0rd-in-clear");
  });

  test("bad input names the field: category, settings[i].key; nothing is written", async () => {
    const bad = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", { key: owner.apiKey, body: { category: "fax", settings: [{ key: "x", value: "1" }] } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^category: must be one of email, sms, push/);
    const badGet = await rest(svc.baseUrl, "GET", "/api/v1/platform-settings?category=fax", { key: owner.apiKey });
    assert.equal(badGet.status, 400);
    assert.match(badGet.body.detail, /category/);
    const badKey = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", {
      key: owner.apiKey,
      body: { category: "sms", settings: [{ key: "provider", value: "webhook" }, { key: "Bad Key", value: "1" }] },
    });
    assert.equal(badKey.status, 400);
    assert.match(badKey.body.detail, /settings\[1\]\.key/);
    const sms = await rest(svc.baseUrl, "GET", "/api/v1/platform-settings?category=sms", { key: owner.apiKey });
    assert.deepEqual(sms.body, {}, "the valid half of the bad request was not written");
  });

  test("a setting sent without value is a 400 naming it, and the stored value stays; an empty string clears it", async () => {
    const put = (settings: unknown[]) => rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", { key: owner.apiKey, body: { category: "push", settings } });
    assert.equal((await put([{ key: "provider", value: "webhook" }])).status, 200);
    const missing = await put([{ key: "provider", description: "only the description" }]);
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /settings\[0\]\.value: is required/);
    const read = async () => (await rest(svc.baseUrl, "GET", "/api/v1/platform-settings?category=push", { key: owner.apiKey })).body;
    assert.deepEqual(await read(), { provider: "webhook" });
    assert.equal((await put([{ key: "provider", value: "" }])).status, 200);
    assert.deepEqual(await read(), { provider: "" });
  });

  test("a PUT reaches every process before it answers: another process reloads its settings over the bus", async () => {
    const other = await startTestService({ settingsKeys: [K1], redisKeyPrefix: svc.config.redisKeyPrefix }, svc.config.databaseUrl!);
    try {
      const theirs = other.running.services.notifications.platformSettings;
      assert.equal((await theirs.settings("email")).smtp_host, "smtp.example.com", "the other process has the email settings cached");
      const put = await rest(svc.baseUrl, "PUT", "/api/v1/platform-settings", {
        key: owner.apiKey,
        body: { category: "email", settings: [{ key: "smtp_host", value: "smtp2.example.com", encrypted: false, description: "" }] },
      });
      assert.equal(put.status, 200);
      assert.equal((await theirs.settings("email")).smtp_host, "smtp2.example.com");
    } finally {
      await other.stop();
    }
  });

  test("PLATFORM_OWNER_TENANT_ID names the owner instead of the flagged tenant", async () => {
    const named = await svc.createTenant("named-owner");
    const other = await startTestService({ settingsKeys: [K1], platformOwnerTenantId: named.tenantId }, svc.config.databaseUrl!);
    try {
      assert.equal((await rest(other.baseUrl, "GET", "/api/v1/platform-settings", { key: named.apiKey })).status, 200);
      assert.equal((await rest(other.baseUrl, "GET", "/api/v1/platform-settings", { key: owner.apiKey })).status, 403);
    } finally {
      await other.stop();
    }
  });

  test("without a settings key an encrypted value is refused with 503 SETTINGS_KEY_NOT_CONFIGURED; plain values still store", async () => {
    const keyless = await startTestService({ settingsKeys: [] }, svc.config.databaseUrl!);
    try {
      const refused = await rest(keyless.baseUrl, "PUT", "/api/v1/platform-settings", {
        key: owner.apiKey,
        body: { category: "push", settings: [{ key: "auth_token", value: "tok", encrypted: true }] },
      });
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.headers.get("x-error-reason"), "SETTINGS_KEY_NOT_CONFIGURED");
      const plain = await rest(keyless.baseUrl, "PUT", "/api/v1/platform-settings", {
        key: owner.apiKey,
        body: { category: "push", settings: [{ key: "provider", value: "webhook", encrypted: false }] },
      });
      assert.equal(plain.status, 200);
    } finally {
      await keyless.stop();
    }
    const rows = await sql(svc.config.databaseUrl!, "SELECT key FROM platform_settings WHERE category = 'push'");
    assert.deepEqual(rows.map((r) => r.key), ["provider"]);
  });

  test("cli settings rotate-key re-encrypts settings and provider secrets under the new key", async () => {
    const tenant = await svc.createTenant("rotating");
    const created = await rest(svc.baseUrl, "POST", "/api/v1/notifications/providers", {
      key: tenant.apiKey,
      body: { type: "webhook", name: "ops", config: { url: "https://hooks.example.com/x", secret: "whsec-rotate-0123456789" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const env = {
      DATABASE_URL: svc.config.databaseUrl!,
      API_KEY_PEPPER: TEST_PEPPER,
      JWT_SIGNING_SECRET: TEST_JWT_SECRET,
      SETTINGS_ENCRYPTION_KEYS: `${K2.id}:${K2.secret},${K1.id}:${K1.secret}`,
      LOG_LEVEL: "silent",
    };
    const cli = await runCli(["settings", "rotate-key"], env);
    assert.equal(cli.code, 0, cli.stderr);
    const out = JSON.parse(cli.stdout);
    assert.equal(out.keyId, "k2");
    assert.equal(out.platformSettings, 1);
    assert.ok(out.providers >= 1);
    const keys = await sql(svc.config.databaseUrl!, "SELECT key_id FROM platform_settings WHERE encrypted UNION ALL SELECT secrets_key_id FROM notification_providers WHERE secrets IS NOT NULL");
    assert.ok(keys.length >= 2 && keys.every((r) => r.key_id === "k2"), JSON.stringify(keys));
    // Only the new key configured now: everything still decrypts.
    const after = await startTestService({ settingsKeys: [K2] }, svc.config.databaseUrl!);
    try {
      assert.equal((await after.running.services.notifications.platformSettings.settings("email")).smtp_password, "p@ss-w0rd-in-clear");
      const again = await runCli(["settings", "rotate-key"], env);
      assert.deepEqual(JSON.parse(again.stdout), { keyId: "k2", platformSettings: 0, providers: 0, others: { sso: 0 } }, "a second rotation has nothing to do");
    } finally {
      await after.stop();
    }
  });
});
