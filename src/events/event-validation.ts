import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { CustomerEvent } from "../../gen/decisioning/v1/events_pb.js";
import { isoToRfc3339 } from "../core/index.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { EventRecord } from "./event-store.js";

/**
 * The whole batch checked before anything is stored (spec: nothing half-written): every problem of
 * every item named by index, `events[3].timestamp`, in one 400. Its size, at most 100 (spec 8), is
 * the request screen's, from events.proto.
 */
export function validateEventBatch(events: readonly CustomerEvent[], receivedAt: Date): EventRecord[] {
  if (events.length === 0) throw invalidFields([{ field: "events", message: "must hold at least one event" }]);
  const violations: FieldViolation[] = [];
  const records = events.map((e, i) => {
    const at = (field: string, message: string) => violations.push({ field: `events[${i}].${field}`, message });
    const eventType = e.eventType.trim();
    if (!eventType) at("eventType", "is required");
    let occurredAt = receivedAt;
    if (e.timestamp) {
      const iso = isoToRfc3339(e.timestamp);
      const ms = iso === null ? NaN : Date.parse(iso);
      if (Number.isNaN(ms)) at("timestamp", "must be an ISO 8601 timestamp");
      else occurredAt = new Date(ms);
    }
    // Null is taken as absent, as JSON clients send it for "no properties".
    const properties = e.properties === undefined ? null : toJson(ValueSchema, e.properties);
    if (properties !== null && (typeof properties !== "object" || Array.isArray(properties))) at("properties", "must be a JSON object");
    return {
      id: newId(),
      eventType,
      customerId: e.customerId || null,
      sessionId: e.sessionId || null,
      properties: (properties ?? {}) as Record<string, unknown>,
      occurredAt,
    };
  });
  if (violations.length) throw invalidFields(violations);
  return records;
}
