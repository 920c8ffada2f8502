/**
 * The contract between computing a report and rendering it (spec 2.9): the report domain fills a
 * ReportDocument from its data sources and narrative writer; the renderers (src/reports/render/)
 * turn it into artifacts without knowing where the numbers came from.
 */

export type ReportFormat = "pdf" | "csv" | "markdown" | "html";
export const REPORT_FORMATS: readonly ReportFormat[] = ["pdf", "csv", "markdown", "html"];

export type ColumnType = "string" | "integer" | "number" | "percent" | "currency" | "date" | "timestamp" | "boolean";

export interface ReportColumn {
  name: string;
  type: ColumnType;
  /** Shown beside the header, e.g. "ms", "EUR", "%". */
  unit?: string;
}

/** A cell: numbers stay numbers (renderers format them), dates are ISO 8601 strings, null is empty. */
export type ReportCell = string | number | boolean | null;

export interface ReportSection {
  id: string;
  title: string;
  columns: ReportColumn[];
  /** Row-major, in column order. */
  rows: ReportCell[][];
  /**
   * Which column is the category axis and which are numeric series when the section should be
   * charted; absent when it has no natural chart.
   */
  chart?: { kind: "bar" | "line"; x: string; y: string[] };
}

export interface ReportNarrative {
  executiveSummary: string;
  sectionNarratives: { sectionId: string; narrative: string }[];
  keyTakeaways: string[];
  /** Which writer produced it (the configured model name, or "deterministic"). */
  writer: string;
}

export interface ReportDocument {
  title: string;
  description: string;
  generatedAt: Date;
  /** The IANA zone that decided day boundaries, e.g. "UTC". */
  timeZone: string;
  /** The period the figures cover, when the data sources have one. */
  period: { from: Date; to: Date } | null;
  sections: ReportSection[];
  narrative: ReportNarrative | null;
}

export interface RenderedArtifact {
  format: ReportFormat;
  mimeType: string;
  fileName: string;
  bytes: Uint8Array;
}

/** Renders one format; implemented in src/reports/render/. */
export type RenderArtifact = (doc: ReportDocument, format: ReportFormat) => Promise<RenderedArtifact>;
