/**
 * The export file (docs/portability.md, "File format"): `formatVersion`, what was exported, when,
 * and the rows by kind, columns camelCased. Import reads the same shape back and refuses anything
 * else with a 400 that says what is wrong.
 */
import { badRequest, invalidField } from "../platform/errors.js";
import { kindByName, type ExportableKind } from "./exportable-kinds.js";
import type { Row } from "./portability-store.js";

/** Bumped when a file of the old format would import differently; import refuses other versions. */
export const FORMAT_VERSION = 1;

export const EXPORT_KINDS = ["full", "decision_flow", "model"] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

/** Spec 8: at most 500 items per entity type. */
export const MAX_ITEMS_PER_KIND = 500;

export interface ExportFile {
  formatVersion: number;
  kind: ExportKind;
  exportedAt: string;
  entities: Record<string, Row[]>;
}

const toCamel = (column: string) => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const toSnake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export function fileRow(row: Row): Row {
  return Object.fromEntries(Object.entries(row).map(([column, value]) => [toCamel(column), value]));
}

/** A file row back to columns: only the table's importable columns; other fields are ignored. */
export function columnRow(row: Row, columns: readonly string[]): Row {
  const known = new Set(columns);
  return Object.fromEntries(Object.entries(row).map(([field, value]) => [toSnake(field), value]).filter(([column]) => known.has(column as string)));
}

export interface ParsedImport {
  kind: ExportKind;
  /** In registry order, so that referenced rows are inserted first. */
  batches: Array<{ kind: ExportableKind; rows: Row[] }>;
}

/** Checks the envelope and the per-kind limits; row contents are checked as they are imported. */
export function parseImport(file: { formatVersion?: number; kind: string; entities?: Record<string, unknown> }): ParsedImport {
  if (file.formatVersion === undefined || file.entities === undefined) {
    throw badRequest("NOT_AN_EXPORT", "not an export file: formatVersion and entities are required (GET /api/v1/export/full writes one)");
  }
  if (file.formatVersion !== FORMAT_VERSION) {
    throw badRequest("UNSUPPORTED_FORMAT_VERSION", `formatVersion: unsupported export format version ${file.formatVersion}; this service reads version ${FORMAT_VERSION}`);
  }
  const kind = (file.kind || "full") as ExportKind;
  if (!EXPORT_KINDS.includes(kind)) throw invalidField("kind", `must be one of ${EXPORT_KINDS.join(", ")}`);
  const byKind = new Map<ExportableKind, Row[]>();
  for (const [name, value] of Object.entries(file.entities)) {
    const exportable = kindByName.get(name);
    if (!exportable) throw invalidField(`entities.${name}`, `unknown entity kind; known kinds: ${[...kindByName.keys()].join(", ")}`);
    if (!Array.isArray(value)) throw invalidField(`entities.${name}`, "must be an array of rows");
    if (value.length > MAX_ITEMS_PER_KIND) throw invalidField(`entities.${name}`, `at most ${MAX_ITEMS_PER_KIND} items per kind, got ${value.length}`);
    value.forEach((row, i) => {
      if (typeof row !== "object" || row === null || Array.isArray(row)) throw invalidField(`entities.${name}[${i}]`, "must be an object");
    });
    byKind.set(exportable, value as Row[]);
  }
  const batches = [...kindByName.values()].filter((k) => byKind.has(k)).map((k) => ({ kind: k, rows: byKind.get(k)! }));
  return { kind, batches };
}
