import type { RenderArtifact, ReportDocument, ReportFormat } from "../report-document.js";
import { renderCsv } from "./csv-renderer.js";
import { renderMarkdown } from "./markdown-renderer.js";

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

/**
 * The renderers of src/reports/render/, one per format. PDF and HTML (charts through vega and
 * vega-lite, PDF through pdfkit) are imported on the first report that needs them: those modules
 * take about 55 MB of a service's resident memory, which a service that renders no report (or only
 * CSV and Markdown) should not carry.
 */
export const renderArtifact: RenderArtifact = async (doc, format) => {
  const bytes =
    format === "pdf"
      ? await (await import("./pdf-renderer.js")).renderPdf(doc)
      : format === "csv"
        ? renderCsv(doc)
        : format === "markdown"
          ? renderMarkdown(doc)
          : await (await import("./html-renderer.js")).renderHtml(doc);
  return { format, mimeType: MIME_TYPES[format], fileName: artifactFileName(doc, format), bytes };
};
