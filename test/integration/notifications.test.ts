import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { putPlatformEmailSettings, startHttpReceiver, startSmtpServer } from "../support/outbound-receivers.js";
import type { OutboundConfig } from "../../src/config.js";
import { OutboundDispatcher } from "../../src/notifications/dispatcher.js";
import { DeliveryStore } from "../../src/notifications/delivery-store.js";
import { ProviderStore } from "../../src/notifications/provider-store.js";
import { guardedPost, PostFailure } from "../../src/notifications/guarded-post.js";
import type { OutboundMessage } from "../../src/notifications/outbound.js";

const KEY = { id: "k1", secret: "notifications-test-key-0123456789abcdef" };
const OUTBOUND: OutboundConfig = { allowPrivate: true, maxAttempts: 3, backoffMs: 20, backoffMaxMs: 100, timeoutMs: 3000 };
const SIGNING = "whsec-test-0123456789abcdef";

let n = 0;
function message(over: Partial<OutboundMessage> = {}): OutboundMessage {
  n++;
  return { kind: "alert", dedupeKey: `alert:test:${n}:${Date.now()}`, subject: `Alert ${n}`, text: `acceptance_rate fell (${n})`, payload: { rule: "r1", n }, ...over };
}

describe("notification providers and the outbound dispatcher", () => {
  let svc: TestService;
  let db: string;
  let tenant: { tenantId: string; apiKey: string };
  let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
  const sql = async (text: string, values: unknown[] = []): Promise<any[]> => {
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    try {
      return (await c.query(text, values)).rows;
    } finally {
      await c.end();
    }
  };
  const createProvider = async (body: unknown, key = tenant.apiKey) => rest(svc.baseUrl, "POST", "/api/v1/notifications/providers", { key, body });
  const dispatcher = () => svc.running.services.dispatcher;

  before(async () => {
    svc = await startTestService({ settingsKeys: [KEY], outbound: OUTBOUND });
    db = svc.config.databaseUrl!;
    tenant = await svc.createTenant();
    receiver = await startHttpReceiver();
  });
  after(async () => {
    await receiver.close();
    await svc.stop();
  });

  describe("provider CRUD", () => {
    test("create answers 201 with secrets as ****; the row holds them only encrypted, under a key id", async () => {
      const res = await createProvider({ type: "webhook", name: "ops-hook", config: { url: `${receiver.url}/crud`, secret: SIGNING, headers: { "X-Team": "ops" } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.type, "webhook");
      assert.deepEqual(res.body.config, { url: `${receiver.url}/crud`, headers: { "X-Team": "ops" }, secret: "****" });
      const [row] = await sql("SELECT config::text AS config, secret_fields, secrets, secrets_key_id FROM notification_providers WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, res.body.id]);
      assert.equal(row.secrets_key_id, "k1");
      assert.deepEqual(row.secret_fields, ["secret"]);
      assert.ok(!row.config.includes(SIGNING) && !row.secrets.includes(SIGNING), "no plaintext secret in the row");
      const audit = await sql("SELECT action, after::text AS after FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [tenant.tenantId, res.body.id]);
      assert.deepEqual(audit.map((a) => a.action), ["create"]);
      assert.ok(!audit[0].after.includes(SIGNING), "the audit snapshot is masked");
    });

    test("read, update (**** keeps a secret), delete; viewers read but do not write; another tenant gets 404", async () => {
      const created = (await createProvider({ type: "sms", name: "gateway", config: { url: `${receiver.url}/sms`, authToken: "tok-123", to: ["+15550100"] } })).body;
      const path = `/api/v1/notifications/providers/${created.id}`;
      const viewer = await svc.createUser(tenant.tenantId, "viewer");
      assert.equal((await rest(svc.baseUrl, "GET", path, { key: viewer.apiKey })).status, 200);
      const list = await rest(svc.baseUrl, "GET", "/api/v1/notifications/providers", { key: viewer.apiKey });
      assert.ok(list.body.data.some((p: any) => p.id === created.id && p.config.authToken === "****"));
      assert.equal((await createProvider({ type: "webhook", name: "nope", config: { url: "https://x.example", secret: SIGNING } }, viewer.apiKey)).status, 403);

      const other = await svc.createTenant();
      for (const [verb, body] of [["GET"], ["PUT", { name: "stolen" }], ["DELETE"]] as const) {
        const res = await rest(svc.baseUrl, verb, path, { key: other.apiKey, body, headers: { "x-requested-with": "test" } });
        assert.equal(res.status, 404, `${verb} from another tenant`);
      }

      const put = await rest(svc.baseUrl, "PUT", path, { key: tenant.apiKey, body: { name: "gateway-2", config: { ...created.config, to: ["+15550199"] } } });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.name, "gateway-2");
      assert.equal(put.body.version, 2);
      assert.deepEqual(put.body.config, { url: `${receiver.url}/sms`, to: ["+15550199"], authToken: "****" });

      receiver.routes.set("/sms", { statuses: [202] });
      const [sent] = await dispatcher().dispatch(tenant.tenantId, [{ providerId: created.id }], message());
      assert.equal(sent.accepted, true, sent.error);
      const got = receiver.received.filter((r) => r.path === "/sms").at(-1)!;
      assert.equal(got.headers.authorization, "Bearer tok-123", "the kept token is the stored one");
      assert.deepEqual(JSON.parse(got.body).to, ["+15550199"]);
      assert.equal(JSON.parse(got.body).channel, "sms");

      const removed = await rest(svc.baseUrl, "DELETE", path, { key: tenant.apiKey, headers: { "x-requested-with": "test" } });
      assert.deepEqual([removed.status, removed.body], [204, null], "spec 7: 204 without a body");
      assert.equal((await rest(svc.baseUrl, "GET", path, { key: tenant.apiKey })).status, 404);
      const actions = await sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq", [tenant.tenantId, created.id]);
      assert.deepEqual(actions.map((a) => a.action), ["create", "update", "delete"]);
    });

    test("a provider an alert rule or a report template sends through is not deleted (409 naming them) until they change", async () => {
      const call = (method: string, path: string, body?: unknown) => rest(svc.baseUrl, method, path, { key: tenant.apiKey, body, headers: { "x-requested-with": "test" } });
      const hook = (await createProvider({ name: "in use", type: "webhook", config: { url: `${receiver.url}/in-use`, secret: SIGNING } })).body;
      const upper = hook.id.toUpperCase();
      const rule = await call("POST", "/api/v1/alerts", { name: "CTR watch", metric: "acceptance_rate", operator: "lt", threshold: 0.05, channels: [upper] });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      const template = await call("POST", "/api/v1/reports/templates", {
        name: "Weekly to hook",
        dataSources: [{ sourceKey: "offer_performance", params: { days: 7 } }],
        sections: [{ id: "offers", title: "Offers", dataSourceIndex: 0 }],
        formats: ["csv"],
        filters: { destinations: [hook.id] },
      });
      assert.equal(template.status, 201, JSON.stringify(template.body));
      const path = `/api/v1/notifications/providers/${hook.id}`;
      const refused = await call("DELETE", path);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.reason, "PROVIDER_IN_USE");
      assert.match(refused.body.detail, /is in use by alert rule "CTR watch", report template "Weekly to hook"; change or delete them first$/);
      assert.equal((await call("PUT", `/api/v1/alerts/${rule.body.id}`, { channels: [{ type: "email", target: "ops@example.com" }] })).status, 200);
      assert.equal((await call("DELETE", `/api/v1/reports/templates/${template.body.id}`)).status, 204);
      assert.equal((await call("DELETE", path)).status, 204);
    });

    test("bad input names the field: unknown type, missing url, unknown setting, short secret; duplicate name 409", async () => {
      const unknown = await createProvider({ type: "carrier-pigeon", name: "p", config: {} });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.detail, /^type: must be one of email, webhook, sms, push/);
      const missing = await createProvider({ type: "webhook", name: "p", config: { secret: SIGNING } });
      assert.equal(missing.status, 400);
      assert.match(missing.body.detail, /config\.url: is required/);
      const typo = await createProvider({ type: "email", name: "p", config: { to: ["a@example.com"], hots: "smtp.example.com" } });
      assert.match(typo.body.detail, /config\.hots: is not a setting of email providers/);
      const short = await createProvider({ type: "webhook", name: "p", config: { url: "https://x.example", secret: "short" } });
      assert.match(short.body.detail, /config\.secret: must be at least 16 characters/);
      const mask = await createProvider({ type: "webhook", name: "p", config: { url: "https://x.example", secret: "****" } });
      assert.match(mask.body.detail, /config\.secret/);
      assert.equal((await sql("SELECT count(*)::int AS n FROM notification_providers WHERE tenant_id = $1 AND name = 'p'", [tenant.tenantId]))[0].n, 0);
      const first = await createProvider({ type: "webhook", name: "twin", config: { url: "https://x.example", secret: SIGNING } });
      assert.equal(first.status, 201);
      const twin = await createProvider({ type: "webhook", name: "twin", config: { url: "https://y.example", secret: SIGNING } });
      assert.equal(twin.status, 409);
    });
  });

  describe("dispatch", () => {
    test("a webhook provider's delivery is signed; the receiver verifies it; the attempt is recorded with the message id", async () => {
      receiver.routes.set("/hook", { statuses: [200], secret: SIGNING });
      const p = (await createProvider({ type: "webhook", name: "signed", config: { url: `${receiver.url}/hook`, secret: SIGNING } })).body;
      const msg = message();
      const [result] = await dispatcher().dispatch(tenant.tenantId, [{ providerId: p.id }], msg);
      assert.equal(result.accepted, true, result.error);
      assert.equal(result.attempts, 1);
      const got = receiver.received.filter((r) => r.path === "/hook").at(-1)!;
      assert.equal(got.signatureValid, true);
      assert.deepEqual(JSON.parse(got.body), msg.payload, "the body is the message payload");
      assert.equal(result.messageId, JSON.parse(`"msg-${receiver.received.length}"`));
      const [delivery] = await sql("SELECT id, status, attempts, provider_message_id FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2", [tenant.tenantId, msg.dedupeKey]);
      assert.equal(delivery.status, "accepted");
      assert.equal(delivery.provider_message_id, result.messageId);
      assert.equal(got.headers["x-webhook-id"], delivery.id);
      const attempts = await sql("SELECT status, http_status, provider_message_id FROM notification_delivery_attempts WHERE tenant_id = $1 AND delivery_id = $2", [tenant.tenantId, delivery.id]);
      assert.deepEqual(attempts, [{ status: "accepted", http_status: 200, provider_message_id: result.messageId }]);
    });

    test("a failed attempt is retried with backoff until one is accepted", async () => {
      receiver.routes.set("/flaky", { statuses: [503, 502, 200] });
      const msg = message();
      const started = Date.now();
      const [result] = await dispatcher().dispatch(tenant.tenantId, [{ type: "webhook", target: `${receiver.url}/flaky` }], msg);
      assert.equal(result.accepted, true, result.error);
      assert.equal(result.attempts, 3);
      assert.ok(Date.now() - started >= 20 + 40, "waited 20 then 40 ms between attempts");
      const attempts = await sql(
        `SELECT a.attempt, a.status, a.http_status, a.error FROM notification_delivery_attempts a JOIN notification_deliveries d ON d.tenant_id = a.tenant_id AND d.id = a.delivery_id
         WHERE d.tenant_id = $1 AND d.dedupe_key = $2 ORDER BY a.attempt`,
        [tenant.tenantId, msg.dedupeKey],
      );
      assert.deepEqual(attempts.map((a) => [a.attempt, a.status, a.http_status]), [[1, "failed", 503], [2, "failed", 502], [3, "accepted", 200]]);
      assert.match(attempts[0].error, /HTTP 503/);
    });

    test("when every attempt fails: accepted false, each attempt recorded; a permanent 4xx is not retried", async () => {
      receiver.routes.set("/down", { statuses: [500] });
      receiver.routes.set("/gone", { statuses: [410] });
      const msg = message();
      const [down, gone] = await dispatcher().dispatch(tenant.tenantId, [{ type: "webhook", target: `${receiver.url}/down` }, { type: "webhook", target: `${receiver.url}/gone` }], msg);
      assert.equal(down.accepted, false);
      assert.equal(down.attempts, 3, "maxAttempts");
      assert.match(down.error!, /HTTP 500/);
      assert.equal(gone.accepted, false);
      assert.equal(gone.attempts, 1, "410 will answer the same again");
      const rows = await sql("SELECT destination_key, status, attempts, last_error FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2 ORDER BY destination_key", [tenant.tenantId, msg.dedupeKey]);
      assert.deepEqual(rows.map((r) => [r.status, r.attempts]), [[ "failed", 3 ], [ "failed", 1 ]]);
      assert.equal(receiver.received.filter((r) => r.path === "/down").length, 3);
    });

    test("dedupe: a destination that accepted a message is not sent it again, even by two dispatches at once", async () => {
      receiver.routes.set("/once", { statuses: [200] });
      const msg = message();
      const to = [{ type: "webhook" as const, target: `${receiver.url}/once` }];
      const [a, b] = await Promise.all([dispatcher().dispatch(tenant.tenantId, to, msg), dispatcher().dispatch(tenant.tenantId, to, msg)]);
      const third = await dispatcher().dispatch(tenant.tenantId, [...to, ...to], msg);
      assert.equal(third.length, 2, "one result per listed destination");
      receiver.routes.set("/twice", { statuses: [200] });
      const listedTwice = await dispatcher().dispatch(tenant.tenantId, [{ type: "webhook", target: `${receiver.url}/twice` }, { type: "webhook", target: `${receiver.url}/twice` }], message());
      assert.deepEqual(listedTwice.map((r) => r.accepted), [true, true]);
      assert.equal(receiver.received.filter((r) => r.path === "/twice").length, 1, "a destination listed twice in one message is sent it once");
      assert.equal(receiver.received.filter((r) => r.path === "/once").length, 1, "sent once");
      assert.equal(third[0].accepted, true, "a repeat reports the earlier acceptance");
      assert.equal(third[0].messageId, [a[0], b[0]].find((r) => r.accepted)!.messageId);
      // A failed delivery, by contrast, is tried again by the next dispatch of the same message.
      receiver.routes.set("/later", { statuses: [410, 200] });
      const retryMsg = message();
      const first = await dispatcher().dispatch(tenant.tenantId, [{ type: "webhook", target: `${receiver.url}/later` }], retryMsg);
      const second = await dispatcher().dispatch(tenant.tenantId, [{ type: "webhook", target: `${receiver.url}/later` }], retryMsg);
      assert.deepEqual([first[0].accepted, second[0].accepted, second[0].attempts], [false, true, 2]);
    });

    test("e-mail through SMTP (nodemailer) to a local server: a provider with its own login, and a legacy target on the platform settings", async () => {
      const smtp = await startSmtpServer("mailer", "smtp-secret-pass");
      try {
        const p = await createProvider({
          type: "email",
          name: "mail",
          config: { host: "localhost", port: smtp.port, secure: false, user: "mailer", password: "smtp-secret-pass", from: "alerts@acme.example", to: ["ops@acme.example", "cto@acme.example"] },
        });
        assert.equal(p.status, 201, JSON.stringify(p.body));
        const msg = message({ subject: "Acceptance rate below 2%", text: "Rule r1 fired at 12:00." });
        const [result] = await dispatcher().dispatch(tenant.tenantId, [{ providerId: p.body.id }], msg);
        assert.equal(result.accepted, true, result.error);
        assert.equal(smtp.mails.length, 1);
        const mail = smtp.mails[0];
        assert.equal(mail.subject, "Acceptance rate below 2%");
        assert.equal(mail.text?.trim(), "Rule r1 fired at 12:00.");
        assert.equal(mail.from?.text, "alerts@acme.example");
        assert.deepEqual((Array.isArray(mail.to) ? mail.to : [mail.to]).flatMap((a) => a!.value.map((v) => v.address)), ["ops@acme.example", "cto@acme.example"]);
        assert.equal(mail.messageId, result.messageId);

        // Legacy {type: email, target}: the platform's e-mail settings, set by the platform owner.
        const owner = await svc.identity.createTenant("platform", { platformOwner: true });
        const put = await putPlatformEmailSettings(svc.baseUrl, owner.apiKey, smtp.port, "platform@acme.example");
        assert.equal(put.status, 200, JSON.stringify(put.body));
        const [legacy] = await dispatcher().dispatch(tenant.tenantId, [{ type: "email", target: "oncall@acme.example" }], message({ subject: "legacy" }));
        assert.equal(legacy.accepted, true, legacy.error);
        assert.equal(smtp.mails[1].subject, "legacy");
        assert.equal(smtp.mails[1].from?.text, "platform@acme.example");

        // A wrong password is refused by the server: permanent, one attempt.
        const wrong = await createProvider({ type: "email", name: "wrong", config: { host: "127.0.0.1", port: smtp.port, user: "mailer", password: "nope", from: "a@acme.example", to: "b@acme.example" } });
        const [refused] = await dispatcher().dispatch(tenant.tenantId, [{ providerId: wrong.body.id }], message());
        assert.equal(refused.accepted, false);
        assert.equal(refused.attempts, 1);
      } finally {
        await smtp.close();
      }
    });

    test("an unknown or foreign provider id fails that destination only", async () => {
      receiver.routes.set("/ok", { statuses: [200] });
      const other = await svc.createTenant();
      const foreign = (await createProvider({ type: "webhook", name: "theirs", config: { url: `${receiver.url}/ok`, secret: SIGNING } }, other.apiKey)).body;
      const results = await dispatcher().dispatch(tenant.tenantId, [{ providerId: foreign.id }, { type: "webhook", target: `${receiver.url}/ok` }], message());
      assert.deepEqual(results.map((r) => r.accepted), [false, true]);
      assert.match(results[0].error!, /not found/);
    });
  });

  test("a workspace reset deletes the tenant's providers and deliveries, as it does the rest of its configuration", async () => {
    const t = await svc.createTenant();
    receiver.routes.set("/reset", { statuses: [200] });
    const p = await createProvider({ type: "webhook", name: "gone-after-reset", config: { url: `${receiver.url}/reset`, secret: SIGNING } }, t.apiKey);
    await dispatcher().dispatch(t.tenantId, [{ providerId: p.body.id }], message());
    const reset = await rest(svc.baseUrl, "POST", "/api/v1/workspace/reset", { key: t.apiKey, body: { confirm: t.tenantId } });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    const [left] = await sql(
      `SELECT (SELECT count(*) FROM notification_providers WHERE tenant_id = $1)::int AS providers,
              (SELECT count(*) FROM notification_deliveries WHERE tenant_id = $1)::int AS deliveries`,
      [t.tenantId],
    );
    assert.deepEqual(left, { providers: 0, deliveries: 0 });
  });

  describe("the SSRF guard (OUTBOUND_ALLOW_PRIVATE unset)", () => {
    const guarded = (): OutboundDispatcher => {
      const services = svc.running.services;
      return new OutboundDispatcher({
        deliveries: new DeliveryStore(svc.running.foundation.db),
        providers: new ProviderStore(svc.running.foundation.db),
        cipher: svc.running.foundation.settingsCipher,
        platformSettings: (c) => services.notifications.platformSettings.settings(c),
        outbound: { ...OUTBOUND, allowPrivate: false },
        logger: svc.running.foundation.logger,
      });
    };

    test("a name that resolves to loopback, a literal private address and plain http are refused, once, without a request", async () => {
      receiver.routes.set("/ssrf", { statuses: [200] });
      const before = receiver.received.length;
      const results = await guarded().dispatch(
        tenant.tenantId,
        [
          { type: "webhook", target: `https://localhost:${receiver.port}/ssrf` },
          { type: "webhook", target: `https://127.0.0.1:${receiver.port}/ssrf` },
          { type: "webhook", target: `https://[::ffff:127.0.0.1]:${receiver.port}/ssrf` },
          { type: "webhook", target: `http://example.com/ssrf` },
        ],
        message(),
      );
      assert.deepEqual(results.map((r) => [r.accepted, r.attempts]), [[false, 1], [false, 1], [false, 1], [false, 1]]);
      assert.match(results[0].error!, /localhost resolves to a private, loopback or otherwise internal address/);
      assert.match(results[1].error!, /internal address/);
      assert.match(results[3].error!, /use https/);
      assert.equal(receiver.received.length, before, "nothing reached the receiver");
    });

    test("SMTP hosts go through the same guard", async () => {
      const p = await createProvider({ type: "email", name: "inward", config: { host: "localhost", port: 25, from: "a@acme.example", to: "b@acme.example" } });
      const [r] = await guarded().dispatch(tenant.tenantId, [{ providerId: p.body.id }], message());
      assert.equal(r.accepted, false);
      assert.match(r.error!, /internal address/);
    });

    test("a redirect is followed only through the guard: to a forbidden address it is refused", async () => {
      const inner = await startHttpReceiver("127.0.0.2");
      try {
        inner.routes.set("/metadata", { statuses: [200] });
        receiver.routes.set("/bounce", { statuses: [307], headers: { location: `${inner.url}/metadata` } });
        receiver.routes.set("/bounce-home", { statuses: [308], headers: { location: "/ok" } });
        receiver.routes.set("/ok", { statuses: [200] });
        receiver.routes.set("/found", { statuses: [302], headers: { location: "/ok" } });
        // Here 127.0.0.1 plays a public address and 127.0.0.2 the inside of the network.
        const options = { allowHttp: true, forbidden: (a: string) => a.endsWith("127.0.0.2"), timeoutMs: 2000 };
        await assert.rejects(guardedPost(`${receiver.url}/bounce`, "{}", {}, options), (e) => e instanceof PostFailure && e.permanent && /127\.0\.0\.2/.test(e.message));
        assert.equal(inner.received.length, 0, "the inner address was never contacted");
        assert.equal((await guardedPost(`${receiver.url}/bounce-home`, "{}", {}, options)).status, 200, "an allowed 308 is followed");
        await assert.rejects(guardedPost(`${receiver.url}/found`, "{}", {}, options), /not followed/);
      } finally {
        await inner.close();
      }
    });

    test("providers refuse literal internal and non-https URLs at write time", async () => {
      // The service under test allows private addresses; the check is the provider config's own.
      const { validateProviderConfig } = await import("../../src/notifications/provider-config.js");
      const violations: Array<{ field: string; message: string }> = [];
      validateProviderConfig("webhook", { url: "https://169.254.169.254/latest", secret: SIGNING }, false, violations);
      validateProviderConfig("sms", { url: "http://gateway.example.com/sms" }, false, violations);
      assert.deepEqual(violations.map((v) => v.field), ["config.url", "config.url"]);
      assert.match(violations[0].message, /private, loopback or link-local/);
      assert.match(violations[1].message, /https/);
    });
  });
});
