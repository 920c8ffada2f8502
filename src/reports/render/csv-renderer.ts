import { stringify } from "csv-stringify/sync";
import type { ReportCell, ReportDocument } from "../report-document.js";
import { columnHeader } from "./cell-text.js";

/**
 * A spreadsheet opens a text cell that starts with one of these as a formula (CSV injection); the
 * cell is prefixed with an apostrophe so it stays text. Numbers are written as numbers, so a
 * negative uplift stays a number.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export function neutralizeFormula(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

const cell = (v: ReportCell): string | number => (v === null ? "" : typeof v === "string" ? neutralizeFormula(v) : typeof v === "boolean" ? String(v) : v);

/**
 * RFC 4180 (CRLF, quotes where needed), UTF-8 with a byte order mark so spreadsheets read it as
 * UTF-8. Sections have different columns, so the file is blocks (docs/reports.md, "CSV layout"):
 * the report title and period first, then per section its title, its header row and its rows,
 * blocks separated by one empty line.
 */
export function renderCsv(doc: ReportDocument): Uint8Array {
  const records: (string | number)[][] = [
    [cell(doc.title)],
    doc.period ? ["period", doc.period.from.toISOString(), doc.period.to.toISOString(), doc.timeZone] : ["timezone", doc.timeZone],
  ];
  for (const s of doc.sections) {
    records.push([], [cell(s.title)], s.columns.map((c) => cell(columnHeader(c))), ...s.rows.map((r) => r.map(cell)));
  }
  return Buffer.from(stringify(records, { bom: true, record_delimiter: "windows" }), "utf8");
}
