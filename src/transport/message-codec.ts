import {
  fromBinary,
  fromJson,
  toJson,
  getOption,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type Message,
  type MessageShape,
} from "@bufbuild/protobuf";
import { isFieldSet } from "@bufbuild/protobuf";
import { field as fieldExt } from "../../gen/decisioning/v1/options_pb.js";
import { AppError, badRequest, invalidFields, type FieldViolation } from "../platform/errors.js";
import { withRfc3339Timestamps } from "./iso-timestamps.js";
import { checkJsonNesting, MAX_VIOLATIONS } from "./request-screen.js";

const DECODE_PREFIX = /^cannot decode .*? from JSON: /;
/** protobuf-es's words for a message (a Struct, a ListValue) given another JSON type. */
const MESSAGE_MISMATCH = /^cannot decode message (google\.protobuf\.(?:Struct|ListValue)|(?!google\.protobuf\.)\S+) from JSON:? (.*)$/s;
/** protobuf-es's words for a Timestamp given something that is not a string: the value alone (`12345`, `object`). */
const TIMESTAMP_MISMATCH = /^cannot decode message google\.protobuf\.Timestamp from JSON: (?!invalid RFC 3339)(.*)$/s;

function cleanMessage(err: unknown): string {
  const message = String((err as Error).message ?? err);
  const mismatch = MESSAGE_MISMATCH.exec(message);
  if (mismatch) return `expected ${mismatch[1] === "google.protobuf.ListValue" ? "array" : "object"}, got ${mismatch[2]}`;
  const timestamp = TIMESTAMP_MISMATCH.exec(message);
  if (timestamp) return `expected an RFC 3339 timestamp string such as "2026-01-31T12:00:00Z", got ${timestamp[1]}`;
  return message.replace(DECODE_PREFIX, "");
}

const isJsonObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
/** Well-known types have JSON forms of their own (Struct, Timestamp, ...): named as one field. */
const hasOwnJsonForm = (schema: DescMessage) => schema.typeName.startsWith("google.protobuf.");

/**
 * Decodes `json` field by field to name each wrong one by its JSON path, into nested messages and
 * lists of them, so every mistake in `{"config": {...}}` is named at once (`config.enabled`).
 */
function fieldViolations(schema: DescMessage, json: JsonObject, path: string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  for (const [key, value] of Object.entries(json)) {
    try {
      fromJson(schema, { [key]: value } as JsonValue, { ignoreUnknownFields: true });
    } catch (err) {
      const field = schema.fields.find((f) => f.jsonName === key || f.name === key);
      const nested = field ? nestedViolations(field, value, `${path}${key}`) : [];
      violations.push(...(nested.length ? nested : [{ field: `${path}${key}`, message: cleanMessage(err) }]));
    }
  }
  return violations;
}

function nestedViolations(field: DescField, value: JsonValue, path: string): FieldViolation[] {
  if (field.fieldKind === "message" && !hasOwnJsonForm(field.message) && isJsonObject(value)) {
    return fieldViolations(field.message, value, `${path}.`);
  }
  if (field.fieldKind === "list" && field.listKind === "message" && !hasOwnJsonForm(field.message) && Array.isArray(value)) {
    return value.flatMap((item, i) => {
      try {
        fromJson(field.message, item, { ignoreUnknownFields: true });
        return [];
      } catch (err) {
        return isJsonObject(item) ? fieldViolations(field.message, item, `${path}[${i}].`) : [{ field: `${path}[${i}]`, message: cleanMessage(err) }];
      }
    });
  }
  return [];
}

/** Throws on bytes that are not UTF-8, where the default decoder would put U+FFFD in their place unseen. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Request bytes to JSON: an empty body is `{}` (a bodiless POST or DELETE), bytes that are not
 * UTF-8 are 400 `MALFORMED_UTF8`, anything unparsable is 400 `Invalid JSON`.
 */
export function parseJsonBody(raw: Uint8Array): JsonValue {
  if (raw.length === 0) return {};
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw badRequest("MALFORMED_UTF8", "The request body is not valid UTF-8");
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw badRequest("INVALID_JSON", "Invalid JSON");
  }
}

/**
 * Nested messages a binary request may hold. A Struct spends up to three message levels per JSON
 * level, so this lets the request screen, not the decoder, refuse JSON nested too deep.
 */
const BINARY_RECURSION_LIMIT = 256;

/** Binary protobuf to message; a malformed one is the caller's INVALID_ARGUMENT, not our INTERNAL. */
export function readBinary<D extends DescMessage>(schema: D, bytes: Uint8Array): MessageShape<D> {
  try {
    return fromBinary(schema, bytes, { recursionLimit: BINARY_RECURSION_LIMIT });
  } catch (err) {
    throw new AppError({ code: "INVALID_ARGUMENT", reason: "MALFORMED_MESSAGE", message: `Malformed ${schema.typeName}: ${(err as Error).message}` });
  }
}

/**
 * JSON to message with spec semantics: unknown keys ignored, known keys strictly typed, and errors
 * that name the offending field as `<field>: <message>` (protobuf-es names the message type instead).
 * With `accepted` (the method policy's accepted_fields), keys outside it are dropped unread, so a
 * field the method ignores is ignored whatever its type or value.
 */
export function readJson<D extends DescMessage>(schema: D, json: JsonValue, accepted?: ReadonlySet<string> | null): MessageShape<D> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalidFields([{ field: "body", message: "must be a JSON object" }]);
  }
  if (accepted) json = Object.fromEntries(Object.entries(json).filter(([key]) => accepted.has(key)));
  checkJsonNesting(json);
  json = withRfc3339Timestamps(schema, json);
  try {
    return fromJson(schema, json, { ignoreUnknownFields: true });
  } catch (err) {
    const violations = fieldViolations(schema, json, "");
    throw invalidFields(violations.length ? violations.slice(0, MAX_VIOLATIONS) : [{ field: "body", message: cleanMessage(err) }]);
  }
}

/**
 * Message to the spec's JSON: implicit values (false, 0, "") are written, fields marked
 * `(decisioning.v1.field).nullable` are written as null when unset instead of being left out, and
 * lists marked `omit_empty` are left out when empty, unless their `kept_when` flag is set in `request`.
 */
export function writeJson(schema: DescMessage, message: Message, request?: Message): JsonValue {
  const json = toJson(schema, message, { alwaysEmitImplicit: true });
  applyFieldPolicies(schema, message, json, request, true);
  return json;
}

/**
 * Connect's JSON is protobuf's own (no nulls: Connect clients read proto3 JSON), but which lists a
 * response holds is part of its meaning, so `omit_empty` applies there too. Null when nothing differs
 * from what Connect writes by itself.
 */
export function connectJson(schema: DescMessage, message: Message, request: Message): JsonValue | null {
  if (!hasOmitEmpty(schema)) return null;
  const json = toJson(schema, message, { alwaysEmitImplicit: true });
  applyFieldPolicies(schema, message, json, request, false);
  return json;
}

interface FieldPolicies {
  nullable: Set<string>;
  omitEmpty: Set<string>;
  /** localName → the request's flag that keeps the list when empty. */
  keptWhen: Map<string, string>;
}

const policyCache = new WeakMap<DescMessage, FieldPolicies>();

function fieldPolicies(schema: DescMessage): FieldPolicies {
  let policies = policyCache.get(schema);
  if (!policies) {
    const marked = (flag: "nullable" | "omitEmpty") => new Set(schema.fields.filter((f) => getOption(f, fieldExt)[flag]).map((f) => f.localName));
    const keptWhen = new Map(schema.fields.map((f) => [f.localName, getOption(f, fieldExt).keptWhen] as const).filter(([, flag]) => flag));
    policies = { nullable: marked("nullable"), omitEmpty: marked("omitEmpty"), keptWhen };
    policyCache.set(schema, policies);
  }
  return policies;
}

/** Only the top level of a response is checked: that is where the lists asked for by request flags are. */
function hasOmitEmpty(schema: DescMessage): boolean {
  return fieldPolicies(schema).omitEmpty.size > 0;
}

/** The request's boolean field of that proto name (its property is the camel-cased name). */
function requestFlag(request: Message | undefined, name: string): boolean {
  const property = name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return request !== undefined && (request as unknown as Record<string, unknown>)[property] === true;
}

function applyFieldPolicies(schema: DescMessage, message: Message, json: JsonValue, request: Message | undefined, nulls: boolean): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  const obj = json as Record<string, JsonValue>;
  const { nullable, omitEmpty, keptWhen } = fieldPolicies(schema);
  for (const f of schema.fields) {
    if (nulls && nullable.has(f.localName) && !isFieldSet(message, f)) obj[f.jsonName] = null;
    const kept = keptWhen.has(f.localName) && requestFlag(request, keptWhen.get(f.localName)!);
    if (omitEmpty.has(f.localName) && !isFieldSet(message, f) && !kept) delete obj[f.jsonName];
    if (f.fieldKind === "message" && isFieldSet(message, f)) {
      applyFieldPolicies(f.message, (message as Record<string, unknown>)[f.localName] as Message, obj[f.jsonName], undefined, nulls);
    } else if (f.fieldKind === "list" && f.listKind === "message") {
      const items = (message as Record<string, unknown>)[f.localName] as Message[];
      const out = obj[f.jsonName] as JsonValue[] | undefined;
      items.forEach((item, i) => out && applyFieldPolicies(f.message, item, out[i], undefined, nulls));
    }
  }
}
