import type { RenderArtifact, ReportDocument, ReportFormat } from "../report-document.js";
import { renderCsv } from "./csv-renderer.js";
import { renderHtml } from "./html-renderer.js";
import { renderMarkdown } from "./markdown-renderer.js";
import { renderPdf } from "./pdf-renderer.js";

export const MIME_TYPES: Record<ReportFormat, string> = {
  pdf: "application/pdf",
  csv: "text/csv; charset=utf-8",
  markdown: "text/markdown; charset=utf-8",
  html: "text/html; charset=utf-8",
};
const EXTENSIONS: Record<ReportFormat, string> = { pdf: "pdf", csv: "csv", markdown: "md", html: "html" };

/** `weekly-offer-report-2026-03-08.pdf`: the title in ASCII letters and digits, and the day it was generated. */
export function artifactFileName(doc: ReportDocument, format: ReportFormat): string {
  const slug = doc.title.normalize("NFKD").replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "").toLowerCase().slice(0, 60) || "report";
  return `${slug}-${doc.generatedAt.toISOString().slice(0, 10)}.${EXTENSIONS[format]}`;
}

/** The renderers of src/reports/render/, one per format. */
export const renderArtifact: RenderArtifact = async (doc, format) => {
  const bytes =
    format === "pdf" ? await renderPdf(doc) : format === "csv" ? renderCsv(doc) : format === "markdown" ? renderMarkdown(doc) : await renderHtml(doc);
  return { format, mimeType: MIME_TYPES[format], fileName: artifactFileName(doc, format), bytes };
};
