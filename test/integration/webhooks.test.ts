import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import pg from "pg";
import { create } from "@bufbuild/protobuf";
import { startTestService, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "../support/service.js";
import { spawnServer } from "../support/server-process.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { WebhookService } from "../../gen/decisioning/v1/webhooks_pb.js";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";

const SECRETS = {
  messagingVerifyToken: "verify-me-0123456789",
  messagingAppSecret: "messaging-app-secret-0123456789",
  deliverySigningSecret: "delivery-signing-secret-0123456789",
};

const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

describe("inbound delivery webhooks", () => {
  let svc: TestService;
  let db: string;
  let t1: { tenantId: string };
  let t2: { tenantId: string };
  const sql = async (text: string, values: unknown[] = []): Promise<any[]> => {
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    try {
      return (await c.query(text, values)).rows;
    } finally {
      await c.end();
    }
  };
  /** An impression Respond recorded with the provider's id of the message that carried it. */
  const interaction = async (tenantId: string, customerId: string, messageId: string) =>
    sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, offer_id, outcome, outcome_details) VALUES ($1, $2, $3, $4, 'sent', $5)`,
      [tenantId, randomUUID(), customerId, randomUUID(), JSON.stringify({ providerMessageId: messageId })],
    );
  /** A message the dispatcher sent and the provider accepted under `messageId`. */
  const delivery = async (tenantId: string, messageId: string) => {
    const id = randomUUID();
    await sql(
      `INSERT INTO notification_deliveries (tenant_id, id, kind, dedupe_key, destination_key, destination, status, attempts, provider_message_id)
       VALUES ($1, $2, 'alert', $3, 'd', '{}', 'accepted', 1, $4)`,
      [tenantId, id, `k-${id}`, messageId],
    );
    return id;
  };
  const eventsOf = (messageId: string) =>
    sql(`SELECT tenant_id, status, provider_status, format, customer_id, delivery_id, interaction_id, occurred_at FROM delivery_events WHERE provider_message_id = $1 ORDER BY occurred_at, provider_status`, [messageId]);
  const postDelivery = (body: string, headers: Record<string, string> = {}, secret = SECRETS.deliverySigningSecret, base = svc.baseUrl) =>
    rest(base, "POST", "/api/v1/webhooks/delivery", {
      rawBody: body,
      headers: { "content-type": "application/json", "x-webhook-signature": sign(secret, body), ...headers },
    });
  const postMessaging = (body: string, headers: Record<string, string> = {}, base = svc.baseUrl) =>
    rest(base, "POST", "/api/v1/webhooks/messaging", {
      rawBody: body,
      headers: { "content-type": "application/json", "x-hub-signature-256": sign(SECRETS.messagingAppSecret, body), ...headers },
    });

  before(async () => {
    svc = await startTestService({
      webhooks: SECRETS,
      outbound: { allowPrivate: true, maxAttempts: 1, backoffMs: 10, backoffMaxMs: 10, timeoutMs: 3000 },
    });
    db = svc.config.databaseUrl!;
    t1 = await svc.createTenant();
    t2 = await svc.createTenant();
  });
  after(async () => {
    await svc.stop();
  });

  describe("messaging verification handshake", () => {
    const verify = (q: string, base = svc.baseUrl) => fetch(`${base}/api/v1/webhooks/messaging?${q}`);

    test("the right token answers the challenge as plain text", async () => {
      const res = await verify(`hub.mode=subscribe&hub.verify_token=${SECRETS.messagingVerifyToken}&hub.challenge=1158201444`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
      assert.equal(await res.text(), "1158201444");
    });

    test("a wrong or missing token is 403; a wrong mode or a challenge that is not a plain token is 400 naming it", async () => {
      assert.equal((await verify("hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1")).status, 403);
      assert.equal((await verify("hub.mode=subscribe&hub.challenge=1")).status, 403);
      const mode = await verify(`hub.mode=unsubscribe&hub.verify_token=${SECRETS.messagingVerifyToken}&hub.challenge=1`);
      assert.equal(mode.status, 400);
      assert.match(JSON.stringify(await mode.json()), /hub\.mode: must be subscribe/);
      const challenge = await verify(`hub.mode=subscribe&hub.verify_token=${SECRETS.messagingVerifyToken}&hub.challenge=%3Cscript%3E`);
      assert.equal(challenge.status, 400);
      assert.match(JSON.stringify(await challenge.json()), /hub\.challenge/);
    });
  });

  describe("messaging status callbacks", () => {
    const callback = (statuses: unknown[]) =>
      JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "waba-1", changes: [{ field: "messages", value: { statuses } }] }] });

    test("a signed callback maps sent and delivered to delivered, read to opened, failed to failed, and ignores other statuses", async () => {
      await interaction(t1.tenantId, "cust-msg", "wamid.A1");
      const body = callback([
        { id: "wamid.A1", status: "sent", timestamp: "1700000000" },
        { id: "wamid.A1", status: "delivered", timestamp: "1700000010" },
        { id: "wamid.A1", status: "read", timestamp: "1700000020" },
        { id: "wamid.A1", status: "failed", timestamp: "1700000030" },
        { id: "wamid.A1", status: "deleted", timestamp: "1700000040" },
      ]);
      const res = await postMessaging(body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { format: "messaging", received: 5, recorded: 4, duplicates: 0, ignored: 1 });
      const rows = await eventsOf("wamid.A1");
      assert.deepEqual(rows.map((r) => [r.provider_status, r.status]), [["sent", "delivered"], ["delivered", "delivered"], ["read", "opened"], ["failed", "failed"]]);
      assert.ok(rows.every((r) => r.tenant_id === t1.tenantId && r.customer_id === "cust-msg"));
      assert.equal(rows[0].occurred_at.toISOString(), "2023-11-14T22:13:20.000Z");
    });

    test("a missing or wrong x-hub-signature-256 is 401 and stores nothing", async () => {
      await interaction(t1.tenantId, "cust-msg", "wamid.B1");
      const body = callback([{ id: "wamid.B1", status: "delivered", timestamp: "1700000000" }]);
      const missing = await rest(svc.baseUrl, "POST", "/api/v1/webhooks/messaging", { rawBody: body, headers: { "content-type": "application/json" } });
      assert.equal(missing.status, 401);
      assert.match(missing.body.detail, /x-hub-signature-256/);
      const wrong = await postMessaging(body, { "x-hub-signature-256": sign("another-secret", body) });
      assert.equal(wrong.status, 401);
      // Signed over other bytes than those sent: the signature covers the raw body, not its meaning.
      const reformatted = await postMessaging(body, { "x-hub-signature-256": sign(SECRETS.messagingAppSecret, JSON.stringify(JSON.parse(body), null, 2)) });
      assert.equal(reformatted.status, 401);
      assert.equal((await eventsOf("wamid.B1")).length, 0);
    });

    test("a status without an id is 400 naming its path", async () => {
      const res = await postMessaging(callback([{ status: "read", timestamp: "1700000000" }]));
      assert.equal(res.status, 400);
      assert.match(res.body.detail, /entry\[0\]\.changes\[0\]\.value\.statuses\[0\]\.id: is required/);
    });
  });

  describe("universal delivery route: four formats", () => {
    test("e-mail cloud, bare and in a notification wrapper, by shape and by X-Provider", async () => {
      await delivery(t1.tenantId, "ses-1");
      const bounce = { notificationType: "Bounce", mail: { messageId: "ses-1", timestamp: "2025-01-01T10:00:00.000Z" }, bounce: { bounceType: "Permanent", timestamp: "2025-01-01T10:00:05.000Z" } };
      const open = { eventType: "Open", mail: { messageId: "ses-1", timestamp: "2025-01-01T10:00:00.000Z" }, open: { timestamp: "2025-01-01T11:00:00.000Z" } };
      const wrapped = { Type: "Notification", MessageId: "sns-77", Message: JSON.stringify({ notificationType: "Delivery", mail: { messageId: "ses-1" }, delivery: { timestamp: "2025-01-01T10:00:02.000Z" } }) };
      assert.equal((await postDelivery(JSON.stringify(bounce))).body.recorded, 1);
      assert.equal((await postDelivery(JSON.stringify(open), { "x-provider": "email_cloud" })).body.recorded, 1);
      const res = await postDelivery(JSON.stringify(wrapped), { "content-type": "text/plain; charset=UTF-8" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.format, "email_cloud");
      const rows = await eventsOf("ses-1");
      assert.deepEqual(rows.map((r) => r.status), ["delivered", "bounced", "opened"]);
      assert.ok(rows.every((r) => r.delivery_id && r.customer_id === null && r.tenant_id === t1.tenantId));
    });

    test("e-mail API batch: events named by sg_message_id (the sent id plus a .filter suffix) are found and normalized", async () => {
      await interaction(t2.tenantId, "cust-api", "sg-abc.dfd.1");
      const body = JSON.stringify([
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "processed", timestamp: 1735725600, sg_event_id: "e0" },
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "delivered", timestamp: 1735725601, sg_event_id: "e1" },
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "open", timestamp: 1735725602, sg_event_id: "e2" },
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "click", timestamp: 1735725603, sg_event_id: "e3" },
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "bounce", type: "blocked", timestamp: 1735725604, sg_event_id: "e4" },
        { sg_message_id: "sg-abc.dfd.1.filter0001.123.0", event: "dropped", timestamp: 1735725605, sg_event_id: "e5" },
      ]);
      const res = await postDelivery(body);
      assert.deepEqual(res.body, { format: "email_api", received: 6, recorded: 5, duplicates: 0, ignored: 1 });
      const rows = await eventsOf("sg-abc.dfd.1");
      assert.deepEqual(rows.map((r) => r.status), ["delivered", "opened", "clicked", "bounced", "failed"]);
      assert.ok(rows.every((r) => r.tenant_id === t2.tenantId && r.customer_id === "cust-api" && r.interaction_id));
    });

    test("SMS status form, with the legacy SID alias, normalized from final statuses only", async () => {
      await interaction(t1.tenantId, "cust-sms", "SM100");
      const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
      const formHeaders = { "content-type": "application/x-www-form-urlencoded" };
      const sent = await postDelivery(form({ MessageSid: "SM100", MessageStatus: "sent", To: "+15550001", From: "+15550002" }), formHeaders);
      assert.deepEqual([sent.status, sent.body.recorded, sent.body.ignored], [200, 0, 1]);
      const undelivered = await postDelivery(form({ SmsSid: "SM100", SmsStatus: "undelivered", To: "+15550001", From: "+15550002" }), { ...formHeaders, "x-provider": "sms" });
      assert.equal(undelivered.body.recorded, 1, JSON.stringify(undelivered.body));
      const rows = await eventsOf("SM100");
      assert.deepEqual(rows.map((r) => [r.format, r.provider_status, r.status]), [["sms", "undelivered", "bounced"]]);
      const noStatus = await postDelivery(form({ MessageSid: "SM100", To: "+1", From: "+2" }), formHeaders);
      assert.equal(noStatus.status, 400);
      assert.match(noStatus.body.detail, /MessageStatus: is required/);
    });

    test("native form with each normalized event; a bad event or timestamp is 400 naming the field", async () => {
      await delivery(t2.tenantId, "native-1");
      for (const [i, event] of ["delivered", "opened", "clicked", "bounced", "failed"].entries()) {
        const res = await postDelivery(JSON.stringify({ providerMessageId: "native-1", event, timestamp: `2025-02-01T00:00:0${i}Z` }));
        assert.equal(res.body.recorded, 1, JSON.stringify(res.body));
      }
      assert.deepEqual((await eventsOf("native-1")).map((r) => r.status), ["delivered", "opened", "clicked", "bounced", "failed"]);
      const badEvent = await postDelivery(JSON.stringify({ providerMessageId: "native-1", event: "exploded" }));
      assert.equal(badEvent.status, 400);
      assert.match(badEvent.body.detail, /event: must be one of/);
      const badTime = await postDelivery(JSON.stringify({ providerMessageId: "native-1", event: "opened", timestamp: "yesterday" }));
      assert.equal(badTime.status, 400);
      assert.match(badTime.body.detail, /timestamp: must be an ISO 8601/);
    });

    test("every format is 401 with a wrong or missing X-Webhook-Signature, and stores nothing", async () => {
      await delivery(t1.tenantId, "sig-1");
      const bodies: Array<[string, Record<string, string>]> = [
        [JSON.stringify({ notificationType: "Delivery", mail: { messageId: "sig-1" } }), {}],
        [JSON.stringify([{ sg_message_id: "sig-1", event: "delivered", timestamp: 1 }]), {}],
        [new URLSearchParams({ MessageSid: "sig-1", MessageStatus: "delivered", To: "+1", From: "+2" }).toString(), { "content-type": "application/x-www-form-urlencoded" }],
        [JSON.stringify({ providerMessageId: "sig-1", event: "delivered" }), {}],
      ];
      for (const [body, headers] of bodies) {
        const wrong = await postDelivery(body, headers, "not-the-secret");
        assert.equal(wrong.status, 401, body);
        assert.match(wrong.body.detail, /X-Webhook-Signature: signature does not match/);
        const missing = await rest(svc.baseUrl, "POST", "/api/v1/webhooks/delivery", { rawBody: body, headers: { "content-type": "application/json", ...headers } });
        assert.equal(missing.status, 401);
        const malformed = await postDelivery(body, { ...headers, "x-webhook-signature": "sha1=abc" });
        assert.equal(malformed.status, 401);
      }
      assert.equal((await eventsOf("sig-1")).length, 0);
    });
  });

  test("end to end: a message the dispatcher sent and an offer Respond recorded as sent get their callbacks", async () => {
    const receiver = await startHttpReceiver();
    try {
      receiver.routes.set("/hook", { statuses: [200] });
      const [sent] = await svc.running.services.dispatcher.dispatch(t1.tenantId, [{ type: "webhook", target: `${receiver.url}/hook` }], {
        kind: "alert", dedupeKey: `alert:e2e:${randomUUID()}`, subject: "s", text: "t", payload: {},
      });
      assert.ok(sent.accepted && sent.messageId, JSON.stringify(sent));
      const tenant = await svc.createTenant();
      const offer = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, body: { name: "e2e-offer", status: "active", priority: 10 } });
      assert.equal(offer.status, 201, JSON.stringify(offer.body));
      const rec = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: tenant.apiKey, body: { customerId: "eve" } });
      const respond = await rest(svc.baseUrl, "POST", "/api/v1/respond", {
        key: tenant.apiKey,
        body: { customerId: "eve", outcome: "click", idempotencyKey: "e2e-1", recommendationId: rec.body.recommendationId, rank: 1, outcomeDetails: { providerMessageId: "esp-e2e-1" } },
      });
      assert.equal(respond.status, 200, JSON.stringify(respond.body));

      assert.equal((await postDelivery(JSON.stringify({ providerMessageId: sent.messageId, event: "delivered" }))).body.recorded, 1);
      assert.equal((await postDelivery(JSON.stringify({ providerMessageId: "esp-e2e-1", event: "opened" }))).body.recorded, 1);
      const [toOps] = await eventsOf(sent.messageId!);
      assert.equal(toOps.tenant_id, t1.tenantId);
      assert.ok(toOps.delivery_id);
      const history = await svc.running.services.webhooks.deliveryEvents.recent(tenant.tenantId, "eve", 5);
      assert.deepEqual(history.map((e) => [e.providerMessageId, e.status]), [["esp-e2e-1", "opened"]]);
    } finally {
      await receiver.close();
    }
  });

  test("a replayed callback is recorded once, even when copies reach two processes at once; an unknown id is 200, ignored and logged", async () => {
    const child = await spawnServer({
      DATABASE_URL: db,
      REDIS_URL: svc.config.redisUrl!,
      REDIS_KEY_PREFIX: svc.config.redisKeyPrefix,
      API_KEY_PEPPER: TEST_PEPPER,
      JWT_SIGNING_SECRET: TEST_JWT_SECRET,
      WEBHOOK_SIGNING_SECRET: SECRETS.deliverySigningSecret,
      // fetch keeps connections alive; the drain need not wait the default 10 s for them.
      SHUTDOWN_GRACE_MS: "500",
    });
    try {
      await delivery(t1.tenantId, "replay-1");
      const body = JSON.stringify([
        { sg_message_id: "replay-1", event: "delivered", timestamp: 1735725601, sg_event_id: "r1" },
        { sg_message_id: "replay-1", event: "open", timestamp: 1735725602, sg_event_id: "r2" },
      ]);
      const copies = await Promise.all([postDelivery(body), postDelivery(body, {}, undefined, child.baseUrl), postDelivery(body, {}, undefined, child.baseUrl)]);
      assert.ok(copies.every((c) => c.status === 200), JSON.stringify(copies.map((c) => c.body)));
      assert.equal(copies.reduce((sum, c) => sum + c.body.recorded, 0), 2);
      const again = await postDelivery(body);
      assert.deepEqual([again.status, again.body.recorded, again.body.duplicates], [200, 0, 2]);
      assert.equal((await eventsOf("replay-1")).length, 2);

      const unknown = await postDelivery(JSON.stringify({ providerMessageId: "nobody-knows-me", event: "delivered" }), {}, undefined, child.baseUrl);
      assert.deepEqual(unknown.body, { format: "native", received: 1, recorded: 0, duplicates: 0, ignored: 1 });
      assert.equal((await eventsOf("nobody-knows-me")).length, 0);
      // The child's log line reaches this process through its stdout, possibly after the answer.
      const deadline = Date.now() + 5_000;
      const find = () => child.logs.find((l) => /no tenant knows/.test(l.msg)) as { messageIds?: string[] } | undefined;
      while (!find() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const logged = find();
      assert.deepEqual(logged?.messageIds, ["nobody-knows-me"]);
    } finally {
      child.child.kill("SIGTERM");
      await child.exited;
    }
  });

  test("the tenant comes from the message id, never the body; the profile history shows each tenant only its own", async () => {
    await interaction(t1.tenantId, "shared-customer", "t1-msg");
    await interaction(t2.tenantId, "shared-customer", "t2-msg");
    const body = JSON.stringify([
      { sg_message_id: "t1-msg", event: "delivered", timestamp: 1735725601, sg_event_id: "x1", tenantId: t2.tenantId },
      { sg_message_id: "t2-msg", event: "open", timestamp: 1735725602, sg_event_id: "x2", tenantId: t1.tenantId },
    ]);
    assert.equal((await postDelivery(body)).body.recorded, 2);
    // An id both tenants recorded reaches each, and neither learns more than its own row.
    await interaction(t1.tenantId, "c-both", "both-msg");
    await interaction(t2.tenantId, "c-both", "both-msg");
    assert.equal((await postDelivery(JSON.stringify({ providerMessageId: "both-msg", event: "clicked" }))).body.recorded, 2);
    assert.deepEqual((await eventsOf("both-msg")).map((r) => r.tenant_id).sort(), [t1.tenantId, t2.tenantId].sort());
    const history = svc.running.services.webhooks.deliveryEvents;
    const h1 = await history.recent(t1.tenantId, "shared-customer", 10);
    const h2 = await history.recent(t2.tenantId, "shared-customer", 10);
    assert.deepEqual(h1.map((e) => [e.providerMessageId, e.status, e.provider]), [["t1-msg", "delivered", "email_api"]]);
    assert.deepEqual(h2.map((e) => [e.providerMessageId, e.status, e.provider]), [["t2-msg", "opened", "email_api"]]);
  });

  test("bad bodies are 400 naming what is wrong, and a batch with one bad item stores none", async () => {
    await delivery(t2.tenantId, "batch-1");
    const invalidJson = await postDelivery("{not json");
    assert.equal(invalidJson.status, 400);
    const unknown = await postDelivery(JSON.stringify({ hello: "world" }));
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.detail, /body: is not a recognised delivery format/);
    const hint = await postDelivery(JSON.stringify({ providerMessageId: "batch-1", event: "opened" }), { "x-provider": "pigeon" });
    assert.equal(hint.status, 400);
    assert.match(hint.body.detail, /X-Provider: must be one of/);
    const batch = await postDelivery(JSON.stringify([
      { sg_message_id: "batch-1", event: "delivered", timestamp: 1735725601 },
      { event: "open", timestamp: 1735725602 },
      { sg_message_id: "batch-1", event: "open", timestamp: "soon" },
    ]));
    assert.equal(batch.status, 400);
    assert.match(batch.body.detail, /\[1\]\.sg_message_id: is required; \[2\]\.timestamp: must be a Unix time in seconds/);
    assert.equal((await eventsOf("batch-1")).length, 0);
  });

  test("Connect and gRPC serve the same method: the signature covers HttpBody.data and travels as metadata", async () => {
    await delivery(t2.tenantId, "door-1");
    const body = JSON.stringify({ providerMessageId: "door-1", event: "clicked", timestamp: "2025-03-01T00:00:00Z" });
    const request = create(HttpBodySchema, { contentType: "application/json", data: Buffer.from(body) });
    const signed = { headers: { "x-webhook-signature": sign(SECRETS.deliverySigningSecret, body) } };
    const viaConnect = await connectClient(WebhookService, svc.baseUrl).receiveDeliveryWebhook(request, signed);
    assert.equal(viaConnect.recorded, 1);
    const viaGrpc = await grpcClient(WebhookService, svc.grpcAddress).receiveDeliveryWebhook(request, signed);
    assert.equal(viaGrpc.duplicates, 1);
    const unsigned = await rpcError(grpcClient(WebhookService, svc.grpcAddress).receiveDeliveryWebhook(request));
    assert.equal(unsigned.code, 16); // unauthenticated
  });

  describe("with no secrets configured", () => {
    let bare: TestService;
    before(async () => {
      bare = await startTestService({ webhooks: { messagingVerifyToken: null, messagingAppSecret: null, deliverySigningSecret: null } }, db);
    });
    after(async () => bare.stop());

    test("every route refuses, signed or not: 403 for the handshake, 401 for callbacks", async () => {
      await delivery(t1.tenantId, "bare-1");
      const handshake = await fetch(`${bare.baseUrl}/api/v1/webhooks/messaging?hub.mode=subscribe&hub.verify_token=&hub.challenge=1`);
      assert.equal(handshake.status, 403);
      const body = JSON.stringify({ providerMessageId: "bare-1", event: "delivered" });
      for (const secret of ["", SECRETS.deliverySigningSecret]) {
        const res = await postDelivery(body, {}, secret, bare.baseUrl);
        assert.equal(res.status, 401);
        assert.match(res.body.detail, /WEBHOOK_SIGNING_SECRET is not configured/);
      }
      const messaging = await postMessaging(JSON.stringify({ object: "x", entry: [] }), {}, bare.baseUrl);
      assert.equal(messaging.status, 401);
      assert.match(messaging.body.detail, /MESSAGING_APP_SECRET is not configured/);
      assert.equal((await eventsOf("bare-1")).length, 0);
    });
  });
});
