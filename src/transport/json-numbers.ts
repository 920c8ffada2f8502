import { ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { MAX_VIOLATIONS } from "./request-screen.js";

/**
 * A number sent as a string in a JSON body (`"priority": "70"`) is a 400 naming the field, for
 * 32-bit integers and floating-point numbers. Protobuf's JSON mapping also reads such strings, but
 * every protobuf JSON writer sends these types as JSON numbers, so only a hand-written body sends
 * one, and the spec's fields are integers and numbers. 64-bit integers stay lenient: the mapping
 * writes them as strings. Float fields keep the mapping's "NaN", "Infinity" and "-Infinity". Query
 * parameters are text by nature and are not checked here.
 */
export function refuseQuotedNumbers(schema: DescMessage, json: JsonValue, accepted?: ReadonlySet<string> | null): void {
  const plan = planOf(schema);
  if (plan === null || typeof json !== "object" || json === null || Array.isArray(json)) return;
  const violations: FieldViolation[] = [];
  checkObject(plan, json, "", violations, accepted ?? null);
  if (violations.length) throw invalidFields(violations.slice(0, MAX_VIOLATIONS));
}

/** A field that holds, or leads to, a number protobuf writes as a JSON number. */
interface NumberField {
  names: readonly string[];
  shape: "one" | "list" | "map";
  /** The number's type, or the plan of the message holding numbers. */
  scalar?: ScalarType;
  message?: Plan;
}
type Plan = NumberField[];

const STRICT = new Set([
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
  ScalarType.FLOAT,
  ScalarType.DOUBLE,
]);
const FLOATS = new Set([ScalarType.FLOAT, ScalarType.DOUBLE]);
const FLOAT_WORDS = new Set(["NaN", "Infinity", "-Infinity"]);

/** Per message type: null when nothing in it (or below it) is a strict number, the common case. */
const plans = new WeakMap<DescMessage, Plan | null>();

function planOf(schema: DescMessage): Plan | null {
  if (plans.has(schema)) return plans.get(schema)!;
  plans.set(schema, null); // a message that holds itself adds nothing the first visit does not
  const plan: Plan = [];
  for (const field of schema.fields) {
    const entry = numberField(field);
    if (entry) plan.push(entry);
  }
  const result = plan.length ? plan : null;
  plans.set(schema, result);
  return result;
}

function numberField(field: DescField): NumberField | null {
  const names = field.name === field.jsonName ? [field.jsonName] : [field.jsonName, field.name];
  switch (field.fieldKind) {
    case "scalar":
      return STRICT.has(field.scalar) ? { names, shape: "one", scalar: field.scalar } : null;
    case "list":
      if (field.listKind === "scalar") return STRICT.has(field.scalar) ? { names, shape: "list", scalar: field.scalar } : null;
      return field.listKind === "message" ? messageField(names, "list", field.message) : null;
    case "map":
      if (field.mapKind === "scalar") return STRICT.has(field.scalar) ? { names, shape: "map", scalar: field.scalar } : null;
      return field.mapKind === "message" ? messageField(names, "map", field.message) : null;
    case "message":
      return messageField(names, "one", field.message);
    default:
      return null;
  }
}

function messageField(names: readonly string[], shape: NumberField["shape"], message: DescMessage): NumberField | null {
  // Well-known types have JSON forms of their own (a Struct's numbers are the caller's data).
  if (message.typeName.startsWith("google.protobuf.")) return null;
  const plan = planOf(message);
  return plan ? { names, shape, message: plan } : null;
}

function checkObject(plan: Plan, json: JsonObject, path: string, violations: FieldViolation[], accepted: ReadonlySet<string> | null): void {
  for (const field of plan) {
    for (const name of field.names) {
      const value = json[name];
      if (value === undefined || value === null || (accepted !== null && !accepted.has(name))) continue;
      const at = path + name;
      if (field.shape === "one") checkValue(field, value, at, violations);
      else if (field.shape === "list" && Array.isArray(value)) value.forEach((item, i) => checkValue(field, item, `${at}[${i}]`, violations));
      else if (field.shape === "map" && isObject(value)) for (const key in value) checkValue(field, value[key], `${at}.${key}`, violations);
    }
  }
}

function checkValue(field: NumberField, value: JsonValue, at: string, violations: FieldViolation[]): void {
  if (field.message) {
    if (isObject(value)) checkObject(field.message, value, `${at}.`, violations, null);
  } else if (typeof value === "string" && !(FLOATS.has(field.scalar!) && FLOAT_WORDS.has(value))) {
    violations.push({ field: at, message: `expected number (${ScalarType[field.scalar!].toLowerCase()}), got ${JSON.stringify(value)}` });
  }
}

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
