import { getOption, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { field as fieldExt } from "../../gen/decisioning/v1/options_pb.js";
import { isoToRfc3339 } from "../core/time.js";

type JsonObject = { [key: string]: JsonValue };

/** What a timestamp that is not ISO 8601 (isoToRfc3339 gives null) is decoded as: text no RFC 3339 pattern matches. */
const NOT_RFC_3339 = "not an RFC 3339 timestamp";

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The spec's timestamps are ISO 8601; protobuf's JSON takes only RFC 3339 (seconds and a zone
 * required). Request JSON is rewritten before decoding: a zone-less time is UTC, a date alone is
 * its first instant (its last on fields marked `(field).end_of_day`), an offset without a colon
 * gets one (core/time.ts isoToRfc3339). Anything else, a day that is not on the calendar included,
 * becomes a string protobuf refuses (`invalid RFC 3339 string`, naming the field): left as it
 * is, `2030-02-30T00:00:00Z` would pass protobuf's pattern and its Date.parse would read March 2.
 */
export function withRfc3339Timestamps<T extends JsonValue>(schema: DescMessage, json: T): T {
  if (!isObject(json)) return json;
  let out: JsonObject | null = null;
  for (const field of schema.fields) {
    for (const key of new Set([field.jsonName, field.name])) {
      if (!(key in json)) continue;
      const value = json[key];
      const rewritten = rewrite(field, value);
      if (rewritten !== value) (out ??= { ...json })[key] = rewritten;
    }
  }
  return (out ?? json) as T;
}

function rewrite(field: DescField, value: JsonValue): JsonValue {
  if (field.fieldKind === "message") return rewriteMessage(field, field.message, value);
  if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
    const items = value.map((item) => rewriteMessage(field, field.message, item));
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (field.fieldKind === "map" && field.mapKind === "message" && isObject(value)) {
    const entries = Object.entries(value).map(([k, v]) => [k, rewriteMessage(field, field.message, v)] as const);
    return entries.some(([k, v]) => v !== value[k]) ? Object.fromEntries(entries) : value;
  }
  return value;
}

function rewriteMessage(field: DescField, message: DescMessage, value: JsonValue): JsonValue {
  if (message.typeName === "google.protobuf.Timestamp") {
    return typeof value === "string" ? (isoToRfc3339(value, getOption(field, fieldExt).endOfDay) ?? NOT_RFC_3339) : value;
  }
  // Other well-known types (Struct, Value, Any, ...) hold free JSON, not fields of a schema.
  if (message.typeName.startsWith("google.protobuf.")) return value;
  return withRfc3339Timestamps(message, value);
}
