import type { ReportCell, ReportColumn } from "../report-document.js";

/**
 * How a cell reads in the human formats (PDF, HTML, Markdown): numbers to at most four decimals
 * without grouping (units stand in the header), booleans as yes/no, null as empty. The CSV keeps
 * numbers as numbers.
 */
export function cellText(value: ReportCell): string {
  if (value === null) return "";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Math.round(value * 10_000) / 10_000);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return value;
}

/** A column header with its unit, e.g. `ctr (%)`. */
export function columnHeader(c: ReportColumn): string {
  return c.unit ? `${c.name} (${c.unit})` : c.name;
}

const NUMERIC = new Set(["integer", "number", "percent", "currency"]);

export function isNumericColumn(c: ReportColumn): boolean {
  return NUMERIC.has(c.type);
}

/** `2026-03-01 – 2026-03-08 (Europe/Berlin)` style line for title blocks. */
export function periodLine(period: { from: Date; to: Date } | null, timeZone: string): string {
  return period ? `Period: ${period.from.toISOString()} to ${period.to.toISOString()} (days bounded in ${timeZone})` : `Time zone: ${timeZone}`;
}
