import { test } from "node:test";
import assert from "node:assert/strict";
import { parseDeliveryCallback, parseMessagingCallback } from "../../src/webhooks/delivery-formats.js";

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const statusesOf = (raw: Buffer, contentType = "application/json", hint?: string) =>
  parseDeliveryCallback(raw, contentType, hint).statuses.map((s) => [s.providerStatus, s.status]);

test("e-mail cloud types: delivery outcomes map, complaints, sends and delays are kept but not normalized", () => {
  const cases: Array<[string, string | null]> = [
    ["Delivery", "delivered"], ["Bounce", "bounced"], ["Open", "opened"], ["Click", "clicked"],
    ["Reject", "failed"], ["Rendering Failure", "failed"], ["Complaint", null], ["Send", null], ["DeliveryDelay", null],
  ];
  for (const [type, status] of cases) {
    assert.deepEqual(statusesOf(json({ eventType: type, mail: { messageId: "m" } })), [[type, status]], type);
  }
});

test("e-mail cloud time: the event's own timestamp beats the mail's; a wrapper's MessageId tells replays apart", () => {
  const inner = { notificationType: "Bounce", mail: { messageId: "m", timestamp: "2025-01-01T00:00:00Z" }, bounce: { timestamp: "2025-01-01T00:00:09Z" } };
  const [bare] = parseDeliveryCallback(json(inner), "application/json", undefined).statuses;
  assert.equal(bare.occurredAt?.toISOString(), "2025-01-01T00:00:09.000Z");
  const [wrapped] = parseDeliveryCallback(json({ Type: "Notification", MessageId: "sns-1", Message: JSON.stringify(inner) }), "text/plain", undefined).statuses;
  assert.equal(wrapped.eventRef, "sns-1");
  const offCalendar = { ...inner, bounce: { timestamp: "2025-02-30T00:00:09Z" } };
  assert.throws(() => parseDeliveryCallback(json(offCalendar), "application/json", undefined), /timestamp: must be an ISO 8601 timestamp/, "not read as March 2");
});

test("a subscription confirmation wrapper is acknowledged with nothing to record and a note for the log", () => {
  const parsed = parseDeliveryCallback(json({ Type: "SubscriptionConfirmation", Message: "confirm", SubscribeURL: "https://example.invalid" }), "text/plain", undefined);
  assert.deepEqual(parsed.statuses, []);
  assert.match(parsed.note ?? "", /SubscriptionConfirmation/);
});

test("the X-Provider hint wins over the shape; an unknown hint is refused by name", () => {
  // Shaped like native, told it is an e-mail API batch: it must then be an array.
  assert.throws(() => parseDeliveryCallback(json({ providerMessageId: "m", event: "opened" }), "application/json", "email_api"), /body: must be an array/);
  assert.throws(() => parseDeliveryCallback(json({ providerMessageId: "m", event: "opened" }), "application/json", "fax"), /X-Provider: must be one of/);
});

test("SMS statuses: only final ones are delivery outcomes, whatever their case", () => {
  const form = (status: string) => Buffer.from(new URLSearchParams({ MessageSid: "SM1", MessageStatus: status, To: "+1", From: "+2" }).toString());
  const cases: Array<[string, string | null]> = [["queued", null], ["sent", null], ["Delivered", "delivered"], ["undelivered", "bounced"], ["failed", "failed"], ["read", "opened"]];
  for (const [status, expected] of cases) assert.deepEqual(statusesOf(form(status), "application/x-www-form-urlencoded"), [[status, expected]], status);
});

test("messaging: numeric-looking ids and timestamps are read; change kinds without statuses add nothing", () => {
  const parsed = parseMessagingCallback(json({
    object: "whatsapp_business_account",
    entry: [{ changes: [{ value: { messages: [{ id: "in-1" }] } }, { value: { statuses: [{ id: 12345, status: "read", timestamp: 1700000000 }] } }] }],
  }));
  assert.deepEqual(parsed.statuses.map((s) => [s.providerMessageId, s.status, s.occurredAt?.toISOString()]), [["12345", "opened", "2023-11-14T22:13:20.000Z"]]);
  assert.throws(() => parseMessagingCallback(json({ entry: [] })), /object: must name/);
});
