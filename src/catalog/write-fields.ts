import { isFieldSet, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { timestampDate, type FieldMask, type Timestamp } from "@bufbuild/protobuf/wkt";
import { charCount } from "../core/char-count.js";
import { parseInstant } from "../core/time.js";
import type { FieldViolation } from "../platform/errors.js";

export type FieldKind = "string" | "int" | "number" | "bool" | "timestamp" | "json" | "strings";

/** One writable column, named as its proto field (snake_case), with its rules. */
export interface FieldRule {
  name: string;
  kind: FieldKind;
  /** May be written as null (cleared). */
  nullable?: boolean;
  /** Must be given on create. */
  required?: boolean;
  /** Numeric range, or string length in characters (code points, core/char-count.ts) for strings. */
  min?: number;
  max?: number;
  oneOf?: readonly string[];
}

export type ColumnValues = Record<string, unknown>;

export interface WriteResult {
  values: ColumnValues;
  violations: FieldViolation[];
}

const MAX_TEXT = 10_000;

/**
 * Which fields a write sets: the update mask's paths when it has any (REST fills it from the body's
 * keys), otherwise the fields present in the message (gRPC and Connect callers).
 */
export function writtenFieldNames(schema: DescMessage, message: Message & { updateMask?: FieldMask }): Set<string> {
  const paths = message.updateMask?.paths ?? [];
  if (paths.length) return new Set(paths);
  const set = new Set<string>();
  for (const f of schema.fields) {
    if (f.name === "id" || f.name === "update_mask") continue;
    if (f.fieldKind === "list" ? (message as any)[f.localName].length > 0 : isFieldSet(message, f)) set.add(f.name);
  }
  return set;
}

function check(rule: FieldRule, value: unknown): string | null {
  switch (rule.kind) {
    case "string": {
      const s = value as string;
      if (rule.oneOf && !rule.oneOf.includes(s)) return `must be one of ${rule.oneOf.join(", ")}`;
      if (rule.min !== undefined && charCount(s.trim()) < rule.min) return rule.min === 1 ? "must not be empty" : `must be at least ${rule.min} characters`;
      if (charCount(s) > (rule.max ?? MAX_TEXT)) return `must be at most ${rule.max ?? MAX_TEXT} characters`;
      if (s.includes("\u0000")) return "must not contain NUL characters";
      return null;
    }
    case "int":
    case "number": {
      const n = value as number;
      if (!Number.isFinite(n)) return "must be a finite number";
      if ((rule.min !== undefined && n < rule.min) || (rule.max !== undefined && n > rule.max)) {
        return `must be between ${rule.min} and ${rule.max}`;
      }
      return null;
    }
    case "strings":
      return (value as string[]).some((s) => charCount(s) > 255) ? "items must be at most 255 characters" : null;
    default:
      return null;
  }
}

function columnValue(rule: FieldRule, raw: unknown): unknown {
  if (rule.kind === "timestamp") return timestampDate(raw as Timestamp);
  if (rule.kind === "string") return (raw as string).trim();
  return raw;
}

/**
 * Turns a write message into column values for the fields it sets, checking each against its rule.
 * Fields outside `rules` are ignored (a route that accepts only some fields passes only those).
 */
export function columnsFromWrite(
  schema: DescMessage,
  message: Message & { updateMask?: FieldMask },
  rules: readonly FieldRule[],
  mode: "create" | "update",
): WriteResult {
  const written = writtenFieldNames(schema, message);
  const values: ColumnValues = {};
  const violations: FieldViolation[] = [];
  for (const rule of rules) {
    const field = schema.fields.find((f) => f.name === rule.name) as DescField;
    if (!written.has(rule.name)) {
      if (mode === "create" && rule.required) violations.push({ field: field.jsonName, message: "is required" });
      continue;
    }
    const present = field.fieldKind === "list" || isFieldSet(message, field);
    if (!present) {
      if (rule.required) violations.push({ field: field.jsonName, message: "is required" });
      else if (rule.nullable) values[rule.name] = null;
      else if (rule.kind === "json") values[rule.name] = {};
      else violations.push({ field: field.jsonName, message: "must not be null" });
      continue;
    }
    const value = columnValue(rule, (message as any)[field.localName]);
    const problem = check(rule, value);
    if (problem) violations.push({ field: field.jsonName, message: problem });
    else values[rule.name] = value;
  }
  return { values, violations };
}

const camel = (column: string) => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function hasKind(rule: FieldRule, value: unknown): boolean {
  switch (rule.kind) {
    case "string":
      return typeof value === "string";
    case "int":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "bool":
      return typeof value === "boolean";
    case "strings":
      return Array.isArray(value) && value.every((v) => typeof v === "string");
    case "timestamp":
      return typeof value === "string" && parseInstant(value) !== null;
    case "json":
      return typeof value === "object";
  }
}

/**
 * Whether a row's null in this field means "never set" rather than "cleared": the field is optional
 * and cannot be written as null, so a create without it stored the column's default. A channel
 * created without `type` has type NULL, and its export says `"type": null`.
 */
const isUnsetNull = (rule: FieldRule, value: unknown) => value === null && !rule.required && !rule.nullable;

/**
 * The same rules checked on a row of column values (an imported row, docs/portability.md) instead
 * of a write message: presence, null, type, then the rule's range, length and choices. Fields are
 * named camelCase, as the file names them. A null in an optional field that cannot be cleared is
 * that field left unset, as a create without it leaves it (`withoutUnsetNulls`): whatever the write
 * routes store and an export writes, an import accepts.
 */
export function columnViolations(row: ColumnValues, rules: readonly FieldRule[]): FieldViolation[] {
  const violations: FieldViolation[] = [];
  for (const rule of rules) {
    const value = row[rule.name];
    const field = camel(rule.name);
    if (value === undefined || value === null) {
      if (rule.required) violations.push({ field, message: "is required" });
      continue;
    }
    if (!hasKind(rule, value)) {
      violations.push({ field, message: `must be a ${rule.kind === "strings" ? "list of strings" : rule.kind === "json" ? "JSON object" : rule.kind}` });
      continue;
    }
    const problem = check(rule, value);
    if (problem) violations.push({ field, message: problem });
  }
  return violations;
}

/**
 * The row without the nulls of fields left unset (`isUnsetNull`), so that an insert gives those
 * columns their defaults, exactly as a create that did not name them: an exported NULL comes back
 * NULL, and a null in a hand-edited file never stores what no write could.
 */
export function withoutUnsetNulls(row: ColumnValues, rules: readonly FieldRule[]): ColumnValues {
  const unset = new Set(rules.filter((rule) => isUnsetNull(rule, row[rule.name])).map((rule) => rule.name));
  return unset.size ? Object.fromEntries(Object.entries(row).filter(([column]) => !unset.has(column))) : row;
}
