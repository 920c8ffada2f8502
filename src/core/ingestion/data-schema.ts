/**
 * Schemas of ingested data (spec 2.21): validated names, column types, and how a field's value as
 * read from a file becomes a PostgreSQL value. Pure: the store builds DDL from what this accepts,
 * and every name it accepts is also quoted there, so no name reaches SQL as code.
 */

import { isCalendarDate } from "../time.js";

export const DATA_TYPES = ["varchar", "text", "integer", "bigint", "numeric", "boolean", "date", "timestamp", "jsonb"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const ENTITY_TYPES = ["customer", "account", "custom"] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

/** Letters, digits and underscore, starting with a letter; short enough that `ds_` + name + suffixes fit 63 bytes. */
export const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;
export const MAX_FIELDS = 200;
/** Columns the service adds to every table or staging table; fields may not take these names. */
export const RESERVED_COLUMNS = new Set(["id", "__line", "__op"]);
/**
 * The automatic key column, added only to a table without a primary-key field (spec 2.21), so a
 * schema with one may name a field `id`.
 */
const AUTOMATIC_KEY = "id";

export interface SchemaField {
  name: string;
  displayName: string;
  dataType: DataType;
  length: number | null;
  precision: number | null;
  scale: number | null;
  isPrimaryKey: boolean;
  isNullable: boolean;
  isUnique: boolean;
  ordinal: number;
}

export interface FieldViolationLike {
  field: string;
  message: string;
}

export function isIdentifier(name: unknown): name is string {
  return typeof name === "string" && IDENTIFIER.test(name);
}

/** `"name"`: every identifier is quoted where it is used (and validated before it gets there). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The PostgreSQL column type of a field. */
export function columnType(f: Pick<SchemaField, "dataType" | "length" | "precision" | "scale">): string {
  switch (f.dataType) {
    case "varchar":
      return `varchar(${f.length ?? 255})`;
    case "numeric":
      return f.precision === null ? "numeric" : `numeric(${f.precision}, ${f.scale ?? 0})`;
    case "timestamp":
      return "timestamptz";
    default:
      return f.dataType;
  }
}

type RawField = Record<string, unknown>;

/** Checks and normalizes a schema's fields; every problem names its field (`fields[2].dataType`). */
export function normalizeFields(raw: readonly RawField[], violations: FieldViolationLike[]): SchemaField[] {
  if (!raw.length) violations.push({ field: "fields", message: "at least one field is required" });
  if (raw.length > MAX_FIELDS) violations.push({ field: "fields", message: `at most ${MAX_FIELDS} fields` });
  const seen = new Set<string>();
  const out: SchemaField[] = [];
  const keyed = raw.some((f) => f.isPrimaryKey === true);
  raw.forEach((f, i) => {
    const at = `fields[${i}]`;
    const name = f.name;
    if (!isIdentifier(name)) {
      violations.push({ field: `${at}.name`, message: "must be 1 to 40 letters, digits or underscores, starting with a letter" });
      return;
    }
    const key = name.toLowerCase();
    if (RESERVED_COLUMNS.has(key) && !(key === AUTOMATIC_KEY && keyed)) {
      violations.push({ field: `${at}.name`, message: key === AUTOMATIC_KEY ? `"${name}" is the automatic key's name; it is free when a field is the primary key` : `"${name}" is reserved` });
    }
    if (seen.has(key)) violations.push({ field: `${at}.name`, message: `"${name}" is named twice` });
    seen.add(key);
    const dataType = String(f.dataType ?? "").toLowerCase();
    if (!(DATA_TYPES as readonly string[]).includes(dataType)) {
      violations.push({ field: `${at}.dataType`, message: `must be one of ${DATA_TYPES.join(", ")}` });
      return;
    }
    const int = (v: unknown) => (v === undefined || v === null ? null : Number(v));
    const length = int(f.length);
    const precision = int(f.precision);
    const scale = int(f.scale);
    if (dataType === "varchar" && length !== null && !(Number.isInteger(length) && length >= 1 && length <= 10485760)) {
      violations.push({ field: `${at}.length`, message: "must be 1 to 10485760" });
    }
    if (dataType === "numeric") {
      if (precision !== null && !(Number.isInteger(precision) && precision >= 1 && precision <= 1000)) violations.push({ field: `${at}.precision`, message: "must be 1 to 1000" });
      if (scale !== null && !(Number.isInteger(scale) && scale >= 0 && scale <= (precision ?? 1000))) violations.push({ field: `${at}.scale`, message: "must be 0 to the precision" });
      if (scale !== null && precision === null) violations.push({ field: `${at}.precision`, message: "is required with scale" });
    }
    const isPrimaryKey = f.isPrimaryKey === true;
    if (isPrimaryKey && dataType === "jsonb") violations.push({ field: `${at}.isPrimaryKey`, message: "a jsonb field cannot be a key" });
    if (isPrimaryKey && f.isNullable === true) violations.push({ field: `${at}.isNullable`, message: "a primary-key field cannot be nullable" });
    const displayName = typeof f.displayName === "string" && f.displayName.trim() ? f.displayName.trim().slice(0, 255) : name;
    out.push({
      name,
      displayName,
      dataType: dataType as DataType,
      length: dataType === "varchar" ? (length ?? 255) : null,
      precision: dataType === "numeric" ? precision : null,
      scale: dataType === "numeric" && precision !== null ? (scale ?? 0) : null,
      isPrimaryKey,
      isNullable: isPrimaryKey ? false : f.isNullable !== false,
      isUnique: f.isUnique === true,
      ordinal: f.ordinal === undefined || f.ordinal === null ? i + 1 : Number(f.ordinal),
    });
  });
  return out.sort((a, b) => a.ordinal - b.ordinal);
}

function refused(f: SchemaField, s: string, what: string): { ok: false; message: string } {
  return { ok: false, message: `${f.name}: "${s.slice(0, 40)}" is not ${what}` };
}

const INTEGER = /^[+-]?\d+$/;
const NUMERIC = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;
const TRUE = new Set(["true", "t", "1", "yes", "y"]);
const FALSE = new Set(["false", "f", "0", "no", "n"]);

/** Digits before the point of a plain decimal (sign and leading zeros not counted), without allocating. */
function wholeDigits(s: string): number {
  let i = s[0] === "+" || s[0] === "-" ? 1 : 0;
  while (s.charCodeAt(i) === 48) i++;
  let n = 0;
  for (let c = s.charCodeAt(i); c >= 48 && c <= 57; c = s.charCodeAt(++i)) n++;
  return n;
}

/** The number of characters (code points) of a string. */
function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * A field's value as text PostgreSQL's COPY accepts for its column, or an error message. Empty
 * strings are null (CSV has no other way to say null); a non-nullable field refuses them.
 */
export function columnValue(f: SchemaField, raw: unknown): { ok: true; value: string | null } | { ok: false; message: string } {
  if (raw === undefined || raw === null || raw === "") {
    return f.isNullable ? { ok: true, value: null } : { ok: false, message: `${f.name}: is required` };
  }
  if (f.dataType === "jsonb") {
    if (typeof raw !== "string") return { ok: true, value: JSON.stringify(raw) };
    try {
      JSON.parse(raw);
      return { ok: true, value: raw };
    } catch {
      return { ok: false, message: `${f.name}: is not JSON` };
    }
  }
  const s = typeof raw === "string" ? raw.trim() : typeof raw === "object" ? JSON.stringify(raw) : String(raw);
  switch (f.dataType) {
    case "varchar": {
      const text = typeof raw === "string" ? raw : s;
      const limit = f.length ?? 255;
      // Characters are code points; UTF-16 units are never fewer, so only a long string is counted.
      return text.length > limit && codePoints(text) > limit ? { ok: false, message: `${f.name}: longer than ${f.length} characters` } : { ok: true, value: text };
    }
    case "text":
      return { ok: true, value: typeof raw === "string" ? raw : s };
    case "integer":
    case "bigint": {
      if (!INTEGER.test(s)) return refused(f, s, "an integer");
      // Up to 9 digits fit an integer and 18 a bigint whatever they are: no BigInt needed (most values).
      if (s.length - (s[0] === "+" || s[0] === "-" ? 1 : 0) <= (f.dataType === "integer" ? 9 : 18)) return { ok: true, value: s };
      const n = BigInt(s);
      const limit = f.dataType === "integer" ? 2n ** 31n : 2n ** 63n;
      return n < -limit || n >= limit ? refused(f, s, `a ${f.dataType} in range`) : { ok: true, value: n.toString() };
    }
    case "numeric": {
      if (!NUMERIC.test(s)) return refused(f, s, "a number");
      if (f.precision !== null) {
        if (!/[eE]/.test(s) && wholeDigits(s) > f.precision - (f.scale ?? 0)) return refused(f, s, `numeric(${f.precision}, ${f.scale ?? 0})`);
      }
      return { ok: true, value: s };
    }
    case "boolean": {
      const l = s.toLowerCase();
      return TRUE.has(l) ? { ok: true, value: "true" } : FALSE.has(l) ? { ok: true, value: "false" } : refused(f, s, "a boolean");
    }
    case "date": {
      if (!DATE.test(s)) return refused(f, s, "a date (YYYY-MM-DD)");
      return isCalendarDate(s) ? { ok: true, value: s } : refused(f, s, "a date");
    }
    default: {
      if (!TIMESTAMP.test(s) || !isCalendarDate(s) || Number.isNaN(Date.parse(s.replace(" ", "T")))) return refused(f, s, "a timestamp (ISO 8601)");
      return { ok: true, value: s };
    }
  }
}
