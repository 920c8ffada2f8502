import { getOption, ScalarType, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { field as fieldExt } from "../../gen/decisioning/v1/options_pb.js";
import { AppError, invalidFields, type FieldViolation } from "../platform/errors.js";

/**
 * Limits every decoded request is held to, whatever the door (docs/errors.md, "Request screening").
 * They are checked before a service runs, so that a value PostgreSQL, Redis or a JSON writer would
 * refuse, or silently change, is a 400 naming the field instead of a 500 or a corrupted row.
 */
export const SCREEN_LIMITS = {
  /** Characters (UTF-16 code units) of any one string, unless its field declares `(field).max_chars`. */
  maxStringChars: 10_000,
  /** Levels of JSON (objects and arrays) from the body's root; XGBoost dumps of deep trees still fit. */
  maxNesting: 64,
  /** Timestamps protobuf can represent in JSON, and PostgreSQL and JavaScript dates can hold. */
  minTimestampSeconds: -62_135_596_800n, // 0001-01-01T00:00:00Z
  maxTimestampSeconds: 253_402_300_799n, // 9999-12-31T23:59:59Z
} as const;

/**
 * NUL (which PostgreSQL text refuses), the other C0 controls, DEL and the C1 controls. Tab, line feed
 * and carriage return are ordinary whitespace of multi-line text and pass.
 */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** How many offending fields one error names; a list of a thousand bad strings is not a readable answer. */
export const MAX_VIOLATIONS = 20;

/** Screens a decoded request; throws 400 VALIDATION_FAILED naming the offending fields. */
export function screenRequest(schema: DescMessage, message: Message): void {
  const violations: FieldViolation[] = [];
  screenMessage(schema, message as unknown as Record<string, unknown>, "", 1, violations);
  if (violations.length) throw invalidFields(violations.slice(0, MAX_VIOLATIONS));
}

/**
 * Nesting of raw JSON, checked before protobuf decodes it (protobuf-es stops at 100 levels with a
 * message naming no field). Iterative, so that a body of a million `[` cannot exhaust the stack.
 */
export function checkJsonNesting(json: JsonValue): void {
  const stack: Array<[JsonValue, number, string]> = [[json, 0, ""]];
  while (stack.length) {
    const [value, depth, field] = stack.pop()!;
    if (typeof value !== "object" || value === null) continue;
    if (depth + 1 > SCREEN_LIMITS.maxNesting) throw nestingTooDeep(field || "body");
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    for (const [key, child] of entries) stack.push([child, depth + 1, field || key]);
  }
}

function nestingTooDeep(field: string): AppError {
  return new AppError({
    code: "INVALID_ARGUMENT",
    reason: "NESTING_TOO_DEEP",
    message: `${field}: nests deeper than ${SCREEN_LIMITS.maxNesting} levels`,
    details: { fields: [{ field, message: `nests deeper than ${SCREEN_LIMITS.maxNesting} levels` }], maxNesting: SCREEN_LIMITS.maxNesting },
  });
}

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/** A field's value; protobuf-es keeps a oneof member under the oneof's name, as `{ case, value }`. */
function valueOf(message: Record<string, unknown>, field: DescField): unknown {
  if (!field.oneof) return message[field.localName];
  const chosen = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return chosen?.case === field.localName ? chosen.value : undefined;
}

/** A field's limits, read once per field: options are decoded from the descriptor on every getOption call. */
interface FieldLimits {
  maxChars: number;
  /** 0: no limit. */
  maxItems: number;
}
const limitsCache = new WeakMap<DescField, FieldLimits>();
function limitsOf(field: DescField): FieldLimits {
  let limits = limitsCache.get(field);
  if (!limits) {
    const policy = getOption(field, fieldExt);
    limitsCache.set(field, (limits = { maxChars: policy.maxChars || SCREEN_LIMITS.maxStringChars, maxItems: policy.maxItems }));
  }
  return limits;
}

/** A list over its field's `(field).max_items`, named once rather than item by item. */
function tooMany(maxItems: number, list: unknown[], at: string, out: FieldViolation[]): boolean {
  if (!maxItems || list.length <= maxItems) return false;
  out.push({ field: at, message: `holds ${list.length} items; at most ${maxItems} are allowed` });
  return true;
}

function screenMessage(schema: DescMessage, message: Record<string, unknown>, path: string, depth: number, out: FieldViolation[]): void {
  if (depth > SCREEN_LIMITS.maxNesting) throw nestingTooDeep(path || "body");
  for (const field of schema.fields) {
    const value = valueOf(message, field);
    if (value === undefined) continue;
    const at = join(path, field.jsonName);
    const { maxChars, maxItems } = limitsOf(field);
    switch (field.fieldKind) {
      case "scalar":
        screenScalar(field.scalar, value, at, maxChars, out);
        break;
      case "enum":
        screenEnum(field, value as number, at, out);
        break;
      case "message":
        screenNested(field.message, value, at, depth, maxChars, out);
        break;
      case "list":
        if (tooMany(maxItems, value as unknown[], at, out)) break;
        (value as unknown[]).forEach((item, i) => {
          const itemAt = `${at}[${i}]`;
          if (field.listKind === "scalar") screenScalar(field.scalar, item, itemAt, maxChars, out);
          else if (field.listKind === "enum") screenEnum(field, item as number, itemAt, out);
          else screenNested(field.message, item, itemAt, depth, maxChars, out);
        });
        break;
      case "map":
        for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
          const itemAt = join(at, key);
          screenString(key, `${at} key`, maxChars, out);
          if (field.mapKind === "scalar") screenScalar(field.scalar, item, itemAt, maxChars, out);
          else if (field.mapKind === "enum") screenEnum(field, item as number, itemAt, out);
          else screenNested(field.message, item, itemAt, depth, maxChars, out);
        }
        break;
    }
  }
}

/**
 * Well-known types first: protobuf-es holds a Struct field as plain JSON, but a Value or ListValue
 * field as its message (`kind: {case, value}`), which is read back as the JSON it stands for so
 * that a violation is named by the caller's path (`properties.note`), not the message's
 * (`properties.kind.value.fields.note.kind.value`). Timestamps are seconds and nanos.
 */
function screenNested(schema: DescMessage, value: unknown, at: string, depth: number, maxChars: number, out: FieldViolation[]): void {
  switch (schema.typeName) {
    case "google.protobuf.Struct":
      return screenJson(value as JsonValue, at, depth + 1, maxChars, out);
    case "google.protobuf.Value":
      return screenJson(plainValue(value as ValueMessage), at, depth + 1, maxChars, out);
    case "google.protobuf.ListValue":
      return screenJson(plainList(value as ListValueMessage), at, depth + 1, maxChars, out);
    case "google.protobuf.Timestamp":
      return screenTimestamp(value as { seconds: bigint; nanos: number }, at, out);
    default:
      return screenMessage(schema, value as Record<string, unknown>, at, depth + 1, out);
  }
}

interface ValueMessage {
  kind: { case: "structValue"; value: { fields: Record<string, ValueMessage> } } | { case: "listValue"; value: ListValueMessage } | { case: string | undefined; value?: unknown };
}
interface ListValueMessage {
  values: ValueMessage[];
}

/** The JSON a Value message stands for; numbers as they are (NaN included), for screenJson to judge. */
function plainValue(v: ValueMessage): JsonValue {
  const { kind } = v;
  switch (kind.case) {
    case "structValue":
      return Object.fromEntries(Object.entries((kind.value as { fields: Record<string, ValueMessage> }).fields).map(([k, item]) => [k, plainValue(item)]));
    case "listValue":
      return plainList(kind.value as ListValueMessage);
    case "stringValue":
    case "numberValue":
    case "boolValue":
      return kind.value as JsonValue;
    default:
      return null;
  }
}

const plainList = (list: ListValueMessage): JsonValue[] => list.values.map(plainValue);

function screenScalar(type: ScalarType, value: unknown, at: string, maxChars: number, out: FieldViolation[]): void {
  if (type === ScalarType.STRING) return screenString(value as string, at, maxChars, out);
  if (type === ScalarType.DOUBLE || type === ScalarType.FLOAT) {
    if (!Number.isFinite(value)) out.push({ field: at, message: "must be a finite number" });
    return;
  }
  // 64-bit integers arrive as bigint; services compute with JavaScript numbers.
  if (typeof value === "bigint" && (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER))) {
    out.push({ field: at, message: `must be between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}` });
  }
}

/** An open proto3 enum accepts any number on the wire; only the declared ones mean something. */
function screenEnum(field: DescField, value: number, at: string, out: FieldViolation[]): void {
  const values = field.enum?.values ?? [];
  if (!values.some((v) => v.number === value)) out.push({ field: at, message: `${value} is not one of its values` });
}

function screenString(value: string, at: string, maxChars: number, out: FieldViolation[]): void {
  if (value.length > maxChars) out.push({ field: at, message: `must be at most ${maxChars} characters` });
  else if (UNPAIRED_SURROGATE.test(value)) out.push({ field: at, message: "must be valid Unicode (it holds an unpaired surrogate)" });
  else {
    const control = CONTROL.exec(value);
    if (control) {
      const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
      out.push({ field: at, message: `must not contain control characters (U+${code} at ${control.index})` });
    }
  }
}

function screenTimestamp(ts: { seconds: bigint; nanos: number }, at: string, out: FieldViolation[]): void {
  const inRange = ts.seconds >= SCREEN_LIMITS.minTimestampSeconds && ts.seconds <= SCREEN_LIMITS.maxTimestampSeconds;
  if (!inRange || ts.nanos < 0 || ts.nanos > 999_999_999) {
    out.push({ field: at, message: "must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z" });
  }
}

/**
 * Free JSON (Struct fields): keys and strings as text, numbers finite and, when whole, exact in a
 * double (a larger integer would not read back as sent), and the nesting bounded.
 */
function screenJson(value: JsonValue, at: string, depth: number, maxChars: number, out: FieldViolation[]): void {
  if (depth > SCREEN_LIMITS.maxNesting) throw nestingTooDeep(at);
  if (typeof value === "string") return screenString(value, at, maxChars, out);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) out.push({ field: at, message: "must be a finite number" });
    else if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      out.push({ field: at, message: `must be a whole number within ±${Number.MAX_SAFE_INTEGER}, or a string` });
    }
    return;
  }
  if (typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) value.forEach((item, i) => screenJson(item, `${at}[${i}]`, depth + 1, maxChars, out));
  else {
    for (const [key, item] of Object.entries(value)) {
      screenString(key, `${at} key`, maxChars, out);
      screenJson(item, join(at, key), depth + 1, maxChars, out);
    }
  }
}
