import { isCalendarDate } from "../core/time.js";
import type { DeliveryStatus } from "../customers/customer-activity.js";
import { badRequest, invalidField, invalidFields, type FieldViolation } from "../platform/errors.js";

/** The body formats of spec 4.18; `messaging` has its own route, the others share /webhooks/delivery. */
export type DeliveryFormat = "messaging" | "email_cloud" | "email_api" | "sms" | "native";

/** The `X-Provider` hints the delivery route accepts (spec 4.18), plus `native` for symmetry. */
export const DELIVERY_HINTS = ["email_cloud", "email_api", "sms", "native"] as const;

/** One status report in a provider's body, before the tenant is known. */
export interface ReportedStatus {
  providerMessageId: string;
  /** The provider's own word (`Bounce`, `undelivered`, `read`), kept for support and for dedupe. */
  providerStatus: string;
  /** Null: not a delivery status (queued, processed, complaint...): acknowledged and ignored. */
  status: DeliveryStatus | null;
  /** When the provider says it happened; null when the format carries no time (SMS form). */
  occurredAt: Date | null;
  /**
   * What tells two reports of the same message and status apart: the provider's event id, else its
   * timestamp as sent, else "" (one report per message and status). A replay repeats it.
   */
  eventRef: string;
}

export interface ParsedCallback {
  format: DeliveryFormat;
  statuses: ReportedStatus[];
  /** Something about the body operators should see (an SNS subscription confirmation). */
  note?: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** Spec 4.18's messaging mapping. */
const MESSAGING_STATUSES: Record<string, DeliveryStatus> = { sent: "delivered", delivered: "delivered", read: "opened", failed: "failed" };

/** E-mail cloud notification and event types (docs/webhooks.md); complaints, sends and delays are not delivery outcomes. */
const EMAIL_CLOUD_STATUSES: Record<string, DeliveryStatus> = {
  delivery: "delivered",
  bounce: "bounced",
  open: "opened",
  click: "clicked",
  reject: "failed",
  "rendering failure": "failed",
};

/** E-mail API events: `blocked` and `bounce` are both bounces, `dropped` never left the provider. */
const EMAIL_API_STATUSES: Record<string, DeliveryStatus> = {
  delivered: "delivered",
  bounce: "bounced",
  blocked: "bounced",
  open: "opened",
  click: "clicked",
  dropped: "failed",
};

/** SMS statuses: only final ones count; `undelivered` is the carrier refusing (a bounce), `failed` never sent. */
const SMS_STATUSES: Record<string, DeliveryStatus> = { delivered: "delivered", undelivered: "bounced", failed: "failed", read: "opened" };

const NATIVE_STATUSES: readonly DeliveryStatus[] = ["delivered", "bounced", "opened", "clicked", "failed"];

/** Status callbacks of the messaging platform: `{object, entry[].changes[].value.statuses[]}`. */
export function parseMessagingCallback(raw: Uint8Array): ParsedCallback {
  const body = parseJson(raw);
  if (!isObject(body) || typeof body.object !== "string" || !body.object) throw invalidField("object", "must name the business-account object");
  if (!Array.isArray(body.entry)) throw invalidField("entry", "must be an array");
  const statuses: ReportedStatus[] = [];
  const problems: FieldViolation[] = [];
  body.entry.forEach((entry, e) => {
    const changes = isObject(entry) ? entry.changes : undefined;
    if (changes === undefined) return;
    if (!Array.isArray(changes)) return problems.push({ field: `entry[${e}].changes`, message: "must be an array" });
    changes.forEach((change, c) => {
      const value = isObject(change) ? change.value : undefined;
      // Inbound messages and other change kinds carry no statuses: nothing to record.
      const list = isObject(value) ? value.statuses : undefined;
      if (list === undefined) return;
      const at = `entry[${e}].changes[${c}].value.statuses`;
      if (!Array.isArray(list)) return problems.push({ field: at, message: "must be an array" });
      list.forEach((item, i) => {
        const s = isObject(item) ? item : {};
        const id = text(s.id), status = text(s.status);
        if (!id) problems.push({ field: `${at}[${i}].id`, message: "is required" });
        if (!status) problems.push({ field: `${at}[${i}].status`, message: "is required" });
        const occurredAt = epochSeconds(s.timestamp, `${at}[${i}].timestamp`, problems);
        if (id && status) statuses.push({ providerMessageId: id, providerStatus: status, status: MESSAGING_STATUSES[status] ?? null, occurredAt, eventRef: text(s.timestamp) });
      });
    });
  });
  if (problems.length) throw invalidFields(problems);
  return { format: "messaging", statuses };
}

/**
 * The universal route: the `X-Provider` hint when given, else the body's shape, picks the format
 * (spec 4.18). A body that matches no format is a 400 rather than a silent 200, so a misconfigured
 * provider shows up in its own delivery log.
 */
export function parseDeliveryCallback(raw: Uint8Array, contentType: string, hint: string | undefined): ParsedCallback {
  const format = hint ? hintedFormat(hint) : detectFormat(raw, contentType);
  switch (format) {
    case "sms":
      return parseSms(raw);
    case "email_api":
      return parseEmailApi(parseJson(raw));
    case "email_cloud":
      return parseEmailCloud(parseJson(raw));
    default:
      return parseNative(parseJson(raw));
  }
}

function hintedFormat(hint: string): Exclude<DeliveryFormat, "messaging"> {
  const h = hint.trim().toLowerCase();
  if (!(DELIVERY_HINTS as readonly string[]).includes(h)) throw invalidField("X-Provider", `must be one of ${DELIVERY_HINTS.join(", ")}`);
  return h as Exclude<DeliveryFormat, "messaging">;
}

function detectFormat(raw: Uint8Array, contentType: string): Exclude<DeliveryFormat, "messaging"> {
  if (contentType.split(";")[0].trim().toLowerCase() === "application/x-www-form-urlencoded") return "sms";
  const body = parseJson(raw);
  if (Array.isArray(body) && body.some((item) => isObject(item) && "sg_message_id" in item)) return "email_api";
  if (isObject(body)) {
    if ("notificationType" in body || "eventType" in body || (typeof body.Message === "string" && typeof body.Type === "string")) return "email_cloud";
    if ("providerMessageId" in body) return "native";
  }
  throw invalidField("body", "is not a recognised delivery format (e-mail cloud, e-mail API, SMS form or native); send X-Provider to name one");
}

/** An e-mail cloud notification, bare or inside a notification wrapper whose `Message` is JSON text. */
function parseEmailCloud(body: Json): ParsedCallback {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object");
  let notification: Json = body;
  if (typeof body.Type === "string" && !("notificationType" in body) && !("eventType" in body)) {
    if (body.Type !== "Notification") {
      // SubscriptionConfirmation and the like: acknowledged; confirming is an operator's step (docs/webhooks.md).
      return { format: "email_cloud", statuses: [], note: `wrapper of type ${body.Type} acknowledged without processing` };
    }
    if (typeof body.Message !== "string") throw invalidField("Message", "must be the notification as JSON text");
    try {
      notification = JSON.parse(body.Message) as Json;
    } catch {
      throw invalidField("Message", "is not valid JSON");
    }
  }
  if (!isObject(notification)) throw invalidField("Message", "must be a JSON object");
  const type = text(notification.notificationType) || text(notification.eventType);
  if (!type) throw invalidField("notificationType", "is required");
  const mail = isObject(notification.mail) ? notification.mail : {};
  const id = text(mail.messageId);
  if (!id) throw invalidField("mail.messageId", "is required");
  // The event's own object (`delivery`, `bounce`, `open`...) holds when it happened; the mail's time is when it was sent.
  const detail = notification[type.charAt(0).toLowerCase() + type.slice(1).replace(/\s+(\w)/g, (_, c: string) => c.toUpperCase())];
  const stamp = (isObject(detail) ? text(detail.timestamp) : "") || text(mail.timestamp);
  const problems: FieldViolation[] = [];
  const occurredAt = isoTime(stamp, "timestamp", problems);
  if (problems.length) throw invalidFields(problems);
  const eventRef = typeof body.MessageId === "string" && notification !== body ? body.MessageId : stamp;
  return {
    format: "email_cloud",
    statuses: [{ providerMessageId: id, providerStatus: type, status: EMAIL_CLOUD_STATUSES[type.toLowerCase()] ?? null, occurredAt, eventRef }],
  };
}

/** An e-mail API batch: an array of events, each naming `sg_message_id`, `event` and a Unix `timestamp`. */
function parseEmailApi(body: Json): ParsedCallback {
  if (!Array.isArray(body)) throw invalidField("body", "must be an array of events");
  const statuses: ReportedStatus[] = [];
  const problems: FieldViolation[] = [];
  body.forEach((item, i) => {
    const e = isObject(item) ? item : {};
    const id = text(e.sg_message_id), event = text(e.event);
    if (!id) problems.push({ field: `[${i}].sg_message_id`, message: "is required" });
    if (!event) problems.push({ field: `[${i}].event`, message: "is required" });
    const occurredAt = epochSeconds(e.timestamp, `[${i}].timestamp`, problems);
    const kind = event === "bounce" && text(e.type) === "blocked" ? "blocked" : event;
    if (id && event) {
      statuses.push({ providerMessageId: id, providerStatus: kind, status: EMAIL_API_STATUSES[kind] ?? null, occurredAt, eventRef: text(e.sg_event_id) || text(e.timestamp) });
    }
  });
  if (problems.length) throw invalidFields(problems);
  return { format: "email_api", statuses };
}

/** The SMS status form: `MessageSid` (legacy `SmsSid`) and `MessageStatus` (legacy `SmsStatus`), with `To` and `From`. */
function parseSms(raw: Uint8Array): ParsedCallback {
  const form = new URLSearchParams(Buffer.from(raw).toString("utf8"));
  const id = form.get("MessageSid") || form.get("SmsSid");
  const status = form.get("MessageStatus") || form.get("SmsStatus");
  const problems: FieldViolation[] = [];
  if (!id) problems.push({ field: "MessageSid", message: "is required" });
  if (!status) problems.push({ field: "MessageStatus", message: "is required" });
  if (problems.length) throw invalidFields(problems);
  return { format: "sms", statuses: [{ providerMessageId: id!, providerStatus: status!, status: SMS_STATUSES[status!.toLowerCase()] ?? null, occurredAt: null, eventRef: "" }] };
}

/** The service's own form: `{providerMessageId, event, timestamp?}` with one of the five normalized events. */
function parseNative(body: Json): ParsedCallback {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object");
  const problems: FieldViolation[] = [];
  const id = text(body.providerMessageId), event = text(body.event);
  if (!id) problems.push({ field: "providerMessageId", message: "is required" });
  if (!NATIVE_STATUSES.includes(event as DeliveryStatus)) problems.push({ field: "event", message: `must be one of ${NATIVE_STATUSES.join(", ")}` });
  const occurredAt = body.timestamp === undefined || body.timestamp === null ? null : isoTime(body.timestamp, "timestamp", problems);
  if (problems.length) throw invalidFields(problems);
  return { format: "native", statuses: [{ providerMessageId: id, providerStatus: event, status: event as DeliveryStatus, occurredAt, eventRef: text(body.timestamp) }] };
}

function parseJson(raw: Uint8Array): Json {
  try {
    return JSON.parse(Buffer.from(raw).toString("utf8")) as Json;
  } catch {
    throw badRequest("INVALID_JSON", "Invalid JSON");
  }
}

/** A string, or a number written as text (ids and timestamps arrive as either). */
function text(v: Json | undefined): string {
  return typeof v === "string" ? v.trim() : typeof v === "number" && Number.isFinite(v) ? String(v) : "";
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

function isoTime(v: Json | undefined, field: string, problems: FieldViolation[]): Date | null {
  const s = text(v);
  if (!s) return null;
  const at = new Date(s);
  if (!ISO_8601.test(s) || !isCalendarDate(s) || Number.isNaN(at.getTime())) {
    problems.push({ field, message: "must be an ISO 8601 timestamp with a time zone" });
    return null;
  }
  return at;
}

/** Unix seconds, as a number or numeric text; absent is allowed (the time it arrived is used). */
function epochSeconds(v: Json | undefined, field: string, problems: FieldViolation[]): Date | null {
  if (v === undefined || v === null || v === "") return null;
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  const at = new Date(n * 1000);
  if (!Number.isFinite(n) || Number.isNaN(at.getTime())) {
    problems.push({ field, message: "must be a Unix time in seconds" });
    return null;
  }
  return at;
}
