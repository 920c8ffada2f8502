import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService } from "../support/child-service.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { rest } from "../support/clients.js";
import { tenantCalls, unique, type Tenant } from "../support/tenant-calls.js";
import { createTemplate } from "../support/report-fixtures.js";
import type { OutboundConfig } from "../../src/config.js";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import { OutboundDispatcher, deliveryLeaseMs } from "../../src/notifications/dispatcher.js";
import { DeliveryStore } from "../../src/notifications/delivery-store.js";
import { ProviderStore } from "../../src/notifications/provider-store.js";
import { newId } from "../../src/platform/ids.js";

/**
 * The outbox (docs/notifications.md, "Redelivery"): a delivery whose process dies is sent by the
 * sweep of another once its lease runs out; a live sender keeps its lease however long its retries
 * take; a stop does not wait for retries beyond its grace.
 */
// A 2 s attempt timeout: the killed child's attempt must still hang when it dies, on a loaded machine too (its lease: 6 s).
const OUTBOUND: OutboundConfig = { allowPrivate: true, maxAttempts: 3, backoffMs: 20, backoffMaxMs: 100, timeoutMs: 2000 };

let svc: TestService;
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let sweep: ScheduledJob;
const { create } = tenantCalls(() => svc.baseUrl);
const hits = (path: string) => receiver.received.filter((r) => r.path === path);

before(async () => {
  svc = await startTestService({ outbound: OUTBOUND });
  receiver = await startHttpReceiver();
  sweep = svc.running.services.jobs.find((j) => j.name === "outbound-redelivery")!;
  assert.ok(sweep, "the sweep is a scheduled job");
  assert.equal(sweep.route, "tick", "and the tick route runs it");
});
after(async () => {
  await receiver.close();
  await svc.stop();
});

/** A dispatcher of the test's own over the service's database, as another process would have. */
function otherDispatcher(outbound: OutboundConfig = OUTBOUND): OutboundDispatcher {
  const db = svc.running.foundation.db;
  return new OutboundDispatcher({
    deliveries: new DeliveryStore(db),
    providers: new ProviderStore(db),
    cipher: svc.running.foundation.settingsCipher,
    platformSettings: async () => ({}),
    outbound,
    logger: svc.running.foundation.logger,
  });
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const rowsOf = (t: Tenant) =>
  svc.sql("SELECT id, dedupe_key, destination_key, status, attempts, last_error FROM notification_deliveries WHERE tenant_id = $1 ORDER BY destination_key", [t.tenantId]);
const storedMessages = (t: Tenant) => svc.sql("SELECT dedupe_key FROM outbound_messages WHERE tenant_id = $1", [t.tenantId]);

test("trigger webhooks whose process was killed mid-attempt are sent by the sweep of another process, each once, when their leases run out", async () => {
  const t = await svc.createTenant(unique("crash"));
  const paths = ["/crash-a", "/crash-b", "/crash-c"];
  for (const path of paths) {
    receiver.routes.set(path, { statuses: [200], hang: true });
    await create("triggers", { name: unique("hook"), eventType: "churn_risk", action: { type: "webhook", target: `${receiver.url}${path}` } }, t);
  }
  const child = await startChildService(svc, { env: { SCHEDULER: "off" } });
  let sent: Awaited<ReturnType<typeof rest>>;
  try {
    sent = await rest(child.baseUrl, "POST", "/api/v1/events", { key: t.apiKey, body: [{ eventType: "churn_risk", customerId: "c-1", properties: { score: 0.9 } }] });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.equal(sent.body.results[0].triggersMatched, 3);
    assert.equal((await storedMessages(t)).length, 3, "the answer came after the webhooks were stored");
    // The child's first attempts reached the receivers, which hold them: the process dies mid-attempt.
    await until("the child's attempts", () => paths.every((p) => hits(p).length === 1));
  } finally {
    await child.kill();
  }
  const before = await rowsOf(t);
  assert.deepEqual(before.map((r) => [r.status, r.attempts]), [["sending", 0], ["sending", 0], ["sending", 0]], "the dead process recorded nothing");
  const kept = await svc.sql("SELECT customer_id FROM outbound_messages WHERE tenant_id = $1", [t.tenantId]);
  assert.deepEqual(kept.map((m) => m.customer_id), ["c-1", "c-1", "c-1"], "each message is in the outbox, under the customer it is about");
  for (const path of paths) receiver.routes.set(path, { statuses: [200] });

  // Two processes sweep at once, repeatedly, from before the leases run out until after.
  const other = otherDispatcher();
  const leaseEnds = Date.now() + deliveryLeaseMs(OUTBOUND);
  const sweeps: Array<Promise<unknown>> = [];
  while (Date.now() < leaseEnds + 1500) {
    sweeps.push(sweep.run(new Date()), other.redeliverOrphaned(50));
    await sleep(100);
  }
  await Promise.all(sweeps);
  other.close();

  for (const path of paths) {
    const got = hits(path);
    assert.equal(got.length, 2, `${path}: the killed attempt, then the sweep's, and no more`);
    assert.equal(got[1].body, got[0].body, "the same message");
    assert.equal(got[1].headers["x-webhook-id"], got[0].headers["x-webhook-id"], "under the same delivery id");
    assert.equal(JSON.parse(got[1].body).event.id, sent!.body.results[0].id);
  }
  const after = await rowsOf(t);
  assert.deepEqual(after.map((r) => [r.status, r.attempts]), [["accepted", 1], ["accepted", 1], ["accepted", 1]]);
  assert.deepEqual(await storedMessages(t), [], "a message leaves the outbox once its deliveries ended");
});

test("a live sender keeps its lease through retries longer than the lease: no sweep takes its row", async () => {
  const t = await svc.createTenant(unique("live"));
  // Each backoff alone is longer than the lease (3 × 500 ms, renewed every 500 ms): only renewal keeps the row.
  const slow = otherDispatcher({ ...OUTBOUND, timeoutMs: 500, backoffMs: 1700, backoffMaxMs: 1700 });
  receiver.routes.set("/live", { statuses: [503, 503, 200] });
  const dispatched = slow.dispatch(t.tenantId, [{ type: "webhook", target: `${receiver.url}/live` }], { kind: "alert", dedupeKey: unique("live"), subject: "s", text: "t", payload: { n: 1 } });
  let settled = false;
  void dispatched.finally(() => (settled = true));
  let takenOver = 0;
  while (!settled) {
    takenOver += await svc.running.services.notifications.dispatcher.redeliverOrphaned(50);
    await sleep(100);
  }
  const [result] = await dispatched;
  slow.close();
  assert.equal(takenOver, 0);
  assert.equal(result.accepted, true, result.error);
  assert.equal(result.attempts, 3);
  assert.equal(hits("/live").length, 3, "three attempts, none of them a sweep's");
});

test("a row whose message was not kept (a sign-in link, or a row from before the outbox) fails with the reason once its lease ran out", async () => {
  const t = await svc.createTenant(unique("unkept"));
  receiver.routes.set("/credential", { statuses: [200], hang: true });
  const dispatcher = otherDispatcher({ ...OUTBOUND, timeoutMs: 300, maxAttempts: 1 });
  const key = unique("verify");
  const sending = dispatcher.dispatch(t.tenantId, [{ type: "webhook", target: `${receiver.url}/credential` }], {
    kind: "auth.verify_email",
    dedupeKey: key,
    subject: "Verify",
    text: "https://example.test/verify?token=secret",
    payload: {},
    holdsCredential: true,
  });
  await until("the attempt", () => hits("/credential").length === 1);
  assert.deepEqual(await storedMessages(t), [], "a message that holds a credential is never stored");
  await sending;
  dispatcher.close();
  // A row as a process that died left it, with no message: written before the outbox existed.
  const id = newId();
  await svc.sql(
    `INSERT INTO notification_deliveries (tenant_id, id, kind, dedupe_key, destination_key, destination, status, lease_until)
     VALUES ($1, $2, 'alert', $3, 'webhook:x', '{"type":"webhook","target":"https://hooks.example.com/x"}', 'sending', now() - interval '1 second')`,
    [t.tenantId, id, unique("old")],
  );
  await sweep.run(new Date());
  const [row] = await svc.sql("SELECT status, last_error FROM notification_deliveries WHERE tenant_id = $1 AND id = $2", [t.tenantId, id]);
  assert.equal(row.status, "failed");
  assert.match(row.last_error, /the message was not kept/);
});

test("a stop takes at most its one grace, whatever is in flight; deliveries still under way stay for the sweep", async () => {
  const GRACE = 2000;
  const own = await startTestService({
    outbound: { ...OUTBOUND, timeoutMs: 8000, maxAttempts: 5, backoffMs: 2000, backoffMaxMs: 2000 },
    shutdownGraceMs: GRACE,
    settingsKeys: [{ id: "k1", secret: "redelivery-test-settings-key-0123456789" }],
  });
  const t = await own.createTenant(unique("stop"));
  receiver.routes.set("/at-stop", { statuses: [200], hang: true });
  receiver.routes.set("/run-at-stop", { statuses: [200], hang: true });
  const call = (path: string, body: unknown = {}) => rest(own.baseUrl, "POST", path, { key: t.apiKey, body });
  const rule = await call("/api/v1/triggers", { name: unique("hook"), eventType: "visit", action: { type: "webhook", target: `${receiver.url}/at-stop` } });
  assert.equal(rule.status, 201, JSON.stringify(rule.body));
  const provider = await call("/api/v1/notifications/providers", { type: "webhook", name: unique("hook"), config: { url: `${receiver.url}/run-at-stop`, secret: "whsec-redelivery-0123456789" } });
  const template = await createTemplate(own, t.apiKey, { name: unique("report"), filters: { destinations: [provider.body.id] } });
  // In flight at the stop: a trigger's webhook attempt (the close waits for it) and a run-now whose
  // delivery attempt hangs (the drain waits for the request). Each used to get a grace of its own.
  assert.equal((await call("/api/v1/events", [{ eventType: "visit", customerId: "c-2" }])).status, 202);
  const runNow = call(`/api/v1/reports/templates/${template.id}/run-now`).catch((err: Error) => err);
  await until("both attempts", () => hits("/at-stop").length === 1 && hits("/run-at-stop").length === 1);
  const started = Date.now();
  await own.stop();
  const took = Date.now() - started;
  assert.ok(took < GRACE + 1200, `stopped in ${took} ms: one grace of ${GRACE} ms, not one per step, nor the attempts' 8 s timeout`);
  await runNow;
  // The stopped service's own database, read directly.
  const client = new pg.Client({ connectionString: own.config.databaseUrl! });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT d.status, (SELECT count(*)::int FROM outbound_messages m WHERE m.tenant_id = d.tenant_id AND m.dedupe_key = d.dedupe_key) AS kept
       FROM notification_deliveries d WHERE d.tenant_id = $1`,
      [t.tenantId],
    );
    assert.deepEqual(rows, [{ status: "sending", kept: 1 }, { status: "sending", kept: 1 }], "left to the sweep, with their messages");
  } finally {
    await client.end();
  }
});

test("a report's attachments are kept as bytes and come back whole to the process that takes the delivery over", async () => {
  const t = await svc.createTenant(unique("files"));
  const store = new DeliveryStore(svc.running.foundation.db);
  const pdf = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256);
  const csv = new TextEncoder().encode("offer,acceptance\nA,0.12\n");
  const message = {
    kind: "report",
    dedupeKey: unique("report"),
    subject: "Report: weekly",
    text: "weekly",
    payload: { z: 1, a: { y: [1, 2], b: null } },
    attachments: [
      { fileName: "weekly.pdf", contentType: "application/pdf", content: pdf },
      { fileName: "weekly.csv", contentType: "text/csv", content: csv.subarray(0, 17) },
    ],
  };
  // A lease that has run out at once: the row is as a process that died right after writing it left it.
  await store.prepare(t.tenantId, message, [{ id: newId(), destinationKey: "provider:p1", destination: { providerId: newId() } }], 0);
  await sleep(5);
  const taken = (await store.claimOrphaned(50, 60_000)).filter((o) => o.row.tenant_id === t.tenantId);
  assert.equal(taken.length, 1);
  const back = taken[0].message!;
  assert.deepEqual(JSON.stringify(back.payload), JSON.stringify(message.payload), "the payload, keys in their order");
  assert.deepEqual(back.attachments!.map((a) => [a.fileName, a.contentType, Buffer.from(a.content).equals(Buffer.from(message.attachments.find((m) => m.fileName === a.fileName)!.content))]), [
    ["weekly.pdf", "application/pdf", true],
    ["weekly.csv", "text/csv", true],
  ]);
  assert.equal(back.attachments![1].content.byteLength, 17, "a view's own bytes, not its whole buffer");
  await store.finish(t.tenantId, taken[0].row.id, "accepted", null, null);
  assert.deepEqual(await storedMessages(t), []);
});

test("a stop hands a run-now's delivery waiting to retry to the outbox: the run records its end before the pools close, and the sweep's delivery later completes it", async () => {
  const config = { outbound: { ...OUTBOUND, maxAttempts: 5, backoffMs: 8000, backoffMaxMs: 8000 }, shutdownGraceMs: 3000, settingsKeys: [{ id: "k1", secret: "redelivery-test-settings-key-0123456789" }] };
  const own = await startTestService(config);
  const t = await own.createTenant(unique("run-now"));
  const call = (path: string, body: unknown = {}) => rest(own.baseUrl, "POST", path, { key: t.apiKey, body });
  receiver.routes.set("/report-down", { statuses: [503] });
  const provider = await call("/api/v1/notifications/providers", { type: "webhook", name: unique("hook"), config: { url: `${receiver.url}/report-down`, secret: "whsec-redelivery-0123456789" } });
  assert.equal(provider.status, 201, JSON.stringify(provider.body));
  const template = await createTemplate(own, t.apiKey, { name: unique("report"), filters: { destinations: [provider.body.id] } });
  const running = call(`/api/v1/reports/templates/${template.id}/run-now`);
  // The first attempt failed; the delivery now waits 8 s before its second.
  await until("the first attempt", () => hits("/report-down").length === 1);
  const started = Date.now();
  await own.stop();
  const res = await running;
  assert.ok(Date.now() - started < 2500, `stopped in ${Date.now() - started} ms, not after the 8 s backoff or the 3 s grace`);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, "failed");
  assert.match(res.body.deliveryResults[0].error, /another process sends it/);
  const client = new pg.Client({ connectionString: own.config.databaseUrl! });
  await client.connect();
  try {
    const { rows: runs } = await client.query("SELECT status FROM report_runs WHERE tenant_id = $1", [t.tenantId]);
    assert.deepEqual(runs, [{ status: "failed" }], "the run ended in the database, not left running");
    const { rows } = await client.query(
      `SELECT d.status, d.attempts, (SELECT count(*)::int FROM outbound_messages m WHERE m.tenant_id = d.tenant_id AND m.dedupe_key = d.dedupe_key) AS kept
       FROM notification_deliveries d WHERE d.tenant_id = $1`,
      [t.tenantId],
    );
    assert.deepEqual(rows, [{ status: "sending", attempts: 1, kept: 1 }], "the delivery is left to the sweep, with its message");
    // As if its lease had run out: the next process's sweep delivers it, and the run's record follows.
    await client.query("UPDATE notification_deliveries SET lease_until = now() - interval '1 second' WHERE tenant_id = $1", [t.tenantId]);
  } finally {
    await client.end();
  }
  receiver.routes.set("/report-down", { statuses: [200] });
  const next = await startTestService(config, own.config.databaseUrl!);
  try {
    assert.equal(await next.running.services.notifications.dispatcher.redeliverOrphaned(50), 1);
    const run = await rest(next.baseUrl, "GET", `/api/v1/reports/runs/${res.body.runId}`, { key: t.apiKey });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, "completed");
    assert.deepEqual(run.body.deliveryResults.map((d: any) => [d.providerId, d.ok, d.error ?? null]), [[provider.body.id, true, null]]);
    assert.equal(hits("/report-down").length, 2);
  } finally {
    await next.stop();
  }
});

test("a GDPR erasure withdraws the customer's messages from the outbox: a sender waiting to retry stops, and the sweep has nothing to send", async () => {
  const t = await svc.createTenant(unique("erase"));
  const customerId = unique("customer");
  receiver.routes.set("/erased", { statuses: [503] });
  const waiting = otherDispatcher({ ...OUTBOUND, backoffMs: 1500, backoffMaxMs: 1500 });
  const about = (key: string) => ({ kind: "trigger", dedupeKey: unique(key), subject: "s", text: "t", payload: { event: { customerId } }, customerId });
  const retrying = waiting.dispatch(t.tenantId, [{ type: "webhook", target: `${receiver.url}/erased` }], about("retrying"));
  // Another about them, whose process died: its lease has run out.
  const orphan = about("orphan");
  await new DeliveryStore(svc.running.foundation.db).prepare(t.tenantId, orphan, [{ id: newId(), destinationKey: "webhook:orphan", destination: { type: "webhook", target: `${receiver.url}/erased` } }], 0);
  // And one about somebody else, which stays.
  const other = { ...about("other"), customerId: "someone-else" };
  await new DeliveryStore(svc.running.foundation.db).prepare(t.tenantId, other, [{ id: newId(), destinationKey: "webhook:other", destination: { type: "webhook", target: `${receiver.url}/erased` } }], 60_000);
  await until("the first attempt", () => hits("/erased").length === 1);

  const erased = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full", { key: t.apiKey, body: { customerId } });
  assert.equal(erased.status, 200, JSON.stringify(erased.body));
  assert.equal(erased.body.removed.outboundMessages, 2);
  const [result] = await retrying;
  waiting.close();
  assert.equal(result.accepted, false);
  assert.match(result.error!, /the customer it is about was erased/);
  await sweep.run(new Date());
  assert.equal(hits("/erased").length, 1, "nothing about the erased customer was sent after the erasure");
  const rows = await svc.sql("SELECT dedupe_key, status, last_error FROM notification_deliveries WHERE tenant_id = $1 ORDER BY dedupe_key", [t.tenantId]);
  assert.deepEqual(
    rows.filter((r) => r.dedupe_key !== other.dedupeKey).map((r) => [r.status, r.last_error]),
    [["failed", "withdrawn: the customer it is about was erased"], ["failed", "withdrawn: the customer it is about was erased"]],
  );
  assert.deepEqual((await storedMessages(t)).map((m) => m.dedupe_key), [other.dedupeKey]);
});
