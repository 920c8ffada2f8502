import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { isForbiddenAddress } from "../../src/notifications/outbound-guard.js";
import { webhookSignature } from "../../src/notifications/webhook-sender.js";
import { createSettingsCipher, derivedKeyId, parseSettingsKeys } from "../../src/platform/settings-cipher.js";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("the SSRF guard's address classes", () => {
  const cases: Array<[string, boolean]> = [
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["10.1.2.3", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["172.32.0.1", false],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["255.255.255.255", true],
    ["8.8.8.8", false],
    ["93.184.216.34", false],
    ["::", true],
    ["::1", true],
    ["fe80::1", true],
    ["fe80::1%eth0", true],
    ["fd00::1", true],
    ["fc12:3456::1", true],
    ["ff02::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["::ffff:10.0.0.1", true],
    ["64:ff9b::a9fe:a9fe", true],
    ["::ffff:8.8.8.8", false],
    ["2606:4700:4700::1111", false],
    ["[::1]", true],
    ["not-an-ip", true],
  ];
  for (const [address, forbidden] of cases) {
    test(`${address} is ${forbidden ? "refused" : "allowed"}`, () => assert.equal(isForbiddenAddress(address), forbidden));
  }
});

describe("the settings cipher", () => {
  const k1 = { id: "k1", secret: "a".repeat(32) };
  const k2 = { id: "k2", secret: "b".repeat(40) };

  test("seals under the first key, opens under any configured key, and binds the value to its context", () => {
    const old = createSettingsCipher([k1]);
    const sealed = old.seal("hunter2", "platform_setting:email:smtp_password");
    assert.equal(sealed.keyId, "k1");
    assert.ok(!Buffer.from(sealed.ciphertext, "base64").toString("latin1").includes("hunter2"));
    assert.notEqual(old.seal("hunter2", "ctx").ciphertext, old.seal("hunter2", "ctx").ciphertext, "a fresh IV per value");
    const rotated = createSettingsCipher([k2, k1]);
    assert.equal(rotated.currentKeyId, "k2");
    assert.equal(rotated.open(sealed, "platform_setting:email:smtp_password"), "hunter2");
    assert.throws(() => rotated.open(sealed, "platform_setting:email:smtp_user"), (e: any) => e.reason === "SETTINGS_DECRYPT_FAILED");
    assert.throws(() => createSettingsCipher([k2]).open(sealed, "x"), (e: any) => e.reason === "SETTINGS_KEY_UNKNOWN" && e.code === "UNAVAILABLE");
  });

  test("without a key nothing is sealed: 503 SETTINGS_KEY_NOT_CONFIGURED", () => {
    const none = createSettingsCipher([]);
    assert.equal(none.configured, false);
    assert.throws(() => none.seal("x", "c"), (e: any) => e.reason === "SETTINGS_KEY_NOT_CONFIGURED" && e.code === "UNAVAILABLE");
  });

  test("key lists: ids, at least 32 bytes, no repeats; a single key gets a stable derived id", () => {
    assert.deepEqual(parseSettingsKeys(`new:${"x".repeat(32)}, old:${"y".repeat(32)}`, null).map((k) => k.id), ["new", "old"]);
    assert.throws(() => parseSettingsKeys("k1:short", null), /shorter than 32 bytes/);
    assert.throws(() => parseSettingsKeys(`k1:${"x".repeat(32)},k1:${"y".repeat(32)}`, null), /twice/);
    assert.throws(() => parseSettingsKeys("x".repeat(40), null), /<id>:<secret>/);
    const [single] = parseSettingsKeys(null, "s".repeat(32));
    assert.equal(single.id, derivedKeyId("s".repeat(32)));
    assert.notEqual(single.id, derivedKeyId("t".repeat(32)));
    assert.throws(() => loadConfig({ SETTINGS_ENCRYPTION_KEY: "short" }), (e) => e instanceof ConfigError && /SETTINGS_ENCRYPTION_KEY/.test(e.message));
    assert.throws(() => loadConfig({ OUTBOUND_ALLOW_PRIVATE: "yes" }), ConfigError);
    assert.throws(() => loadConfig({ PLATFORM_OWNER_TENANT_ID: "acme" }), ConfigError);
    assert.equal(loadConfig({}).outbound.allowPrivate, false);
  });
});

test("the webhook signature is HMAC-SHA256 over `<timestamp>.<raw body>` (known answer, computed with Python's hmac)", () => {
  assert.equal(webhookSignature("whsec_0123456789abcdef", 1700000000, '{"a":1}'), "sha256=9f5e37cdc7ea587c7c02062d93283cad000d66a831b2a1676418696db47ed6c2");
});

describe("local secrets of the embedded default", () => {
  test("a new data directory gets a settings encryption key; an older secrets.json gains one and keeps the rest", async () => {
    const { mkdtempSync, readFileSync, writeFileSync, statSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { loadOrCreateLocalSecrets } = await import("../../src/platform/secrets.js");
    const fresh = loadOrCreateLocalSecrets(join(mkdtempSync(join(tmpdir(), "notify-secrets-")), "data"));
    assert.ok(Buffer.byteLength(fresh.settingsEncryptionKey) >= 32);
    const dir = mkdtempSync(join(tmpdir(), "notify-secrets-"));
    const old = { apiKeyPepper: "p".repeat(64), jwtSigningSecret: "j".repeat(64), postgresPassword: "pw" };
    writeFileSync(join(dir, "secrets.json"), JSON.stringify(old), { mode: 0o600 });
    const upgraded = loadOrCreateLocalSecrets(dir);
    assert.equal(upgraded.apiKeyPepper, old.apiKeyPepper);
    assert.equal(upgraded.postgresPassword, "pw");
    assert.ok(Buffer.byteLength(upgraded.settingsEncryptionKey) >= 32);
    assert.equal(JSON.parse(readFileSync(join(dir, "secrets.json"), "utf8")).settingsEncryptionKey, upgraded.settingsEncryptionKey, "kept for the next start");
    assert.equal(loadOrCreateLocalSecrets(dir).settingsEncryptionKey, upgraded.settingsEncryptionKey);
    assert.equal(statSync(join(dir, "secrets.json")).mode & 0o777, 0o600);
  });
});
