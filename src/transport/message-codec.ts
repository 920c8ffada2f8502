import {
  fromBinary,
  fromJson,
  toJson,
  getOption,
  type DescMessage,
  type JsonValue,
  type Message,
  type MessageShape,
} from "@bufbuild/protobuf";
import { isFieldSet } from "@bufbuild/protobuf";
import { field as fieldExt } from "../../gen/decisioning/v1/options_pb.js";
import { AppError, badRequest, invalidFields, type FieldViolation } from "../platform/errors.js";
import { withRfc3339Timestamps } from "./iso-timestamps.js";

const DECODE_PREFIX = /^cannot decode .*? from JSON: /;

function cleanMessage(err: unknown): string {
  return String((err as Error).message ?? err).replace(DECODE_PREFIX, "");
}

/** Request bytes to JSON: an empty body is `{}` (a bodiless POST or DELETE), anything unparsable is 400 `Invalid JSON`. */
export function parseJsonBody(raw: Uint8Array): JsonValue {
  if (raw.length === 0) return {};
  try {
    return JSON.parse(Buffer.from(raw).toString("utf8")) as JsonValue;
  } catch {
    throw badRequest("INVALID_JSON", "Invalid JSON");
  }
}

/** Binary protobuf to message; a malformed one is the caller's INVALID_ARGUMENT, not our INTERNAL. */
export function readBinary<D extends DescMessage>(schema: D, bytes: Uint8Array): MessageShape<D> {
  try {
    return fromBinary(schema, bytes);
  } catch (err) {
    throw new AppError({ code: "INVALID_ARGUMENT", reason: "MALFORMED_MESSAGE", message: `Malformed ${schema.typeName}: ${(err as Error).message}` });
  }
}

/**
 * JSON to message with spec semantics: unknown keys ignored, known keys strictly typed, and errors
 * that name the offending field as `<field>: <message>` (protobuf-es names the message type instead).
 */
export function readJson<D extends DescMessage>(schema: D, json: JsonValue): MessageShape<D> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalidFields([{ field: "body", message: "must be a JSON object" }]);
  }
  json = withRfc3339Timestamps(schema, json);
  try {
    return fromJson(schema, json, { ignoreUnknownFields: true });
  } catch (err) {
    // Decode field by field to say which ones are wrong.
    const violations: FieldViolation[] = [];
    for (const [key, value] of Object.entries(json)) {
      try {
        fromJson(schema, { [key]: value } as JsonValue, { ignoreUnknownFields: true });
      } catch (fieldErr) {
        violations.push({ field: key, message: cleanMessage(fieldErr) });
      }
    }
    throw invalidFields(violations.length ? violations : [{ field: "body", message: cleanMessage(err) }]);
  }
}

/**
 * Message to the spec's JSON: implicit values (false, 0, "") are written, fields marked
 * `(decisioning.v1.field).nullable` are written as null when unset instead of being left out, and
 * lists marked `omit_empty` are left out when empty.
 */
export function writeJson(schema: DescMessage, message: Message): JsonValue {
  const json = toJson(schema, message, { alwaysEmitImplicit: true });
  applyFieldPolicies(schema, message, json);
  return json;
}

const policyCache = new WeakMap<DescMessage, { nullable: Set<string>; omitEmpty: Set<string> }>();

function fieldPolicies(schema: DescMessage): { nullable: Set<string>; omitEmpty: Set<string> } {
  let policies = policyCache.get(schema);
  if (!policies) {
    const marked = (flag: "nullable" | "omitEmpty") => new Set(schema.fields.filter((f) => getOption(f, fieldExt)[flag]).map((f) => f.localName));
    policies = { nullable: marked("nullable"), omitEmpty: marked("omitEmpty") };
    policyCache.set(schema, policies);
  }
  return policies;
}

function applyFieldPolicies(schema: DescMessage, message: Message, json: JsonValue): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  const obj = json as Record<string, JsonValue>;
  const { nullable, omitEmpty } = fieldPolicies(schema);
  for (const f of schema.fields) {
    if (nullable.has(f.localName) && !isFieldSet(message, f)) obj[f.jsonName] = null;
    if (omitEmpty.has(f.localName) && !isFieldSet(message, f)) delete obj[f.jsonName];
    if (f.fieldKind === "message" && isFieldSet(message, f)) {
      applyFieldPolicies(f.message, (message as Record<string, unknown>)[f.localName] as Message, obj[f.jsonName]);
    } else if (f.fieldKind === "list" && f.listKind === "message") {
      const items = (message as Record<string, unknown>)[f.localName] as Message[];
      const out = obj[f.jsonName] as JsonValue[] | undefined;
      items.forEach((item, i) => out && applyFieldPolicies(f.message, item, out[i]));
    }
  }
}
