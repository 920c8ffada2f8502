import type { ReportDocument } from "../report-document.js";
import { cellText, columnHeader, isNumericColumn, periodLine } from "./cell-text.js";

/**
 * Escapes a value for GitHub-flavoured Markdown, in table cells too: Markdown's punctuation and
 * `|` get a backslash, `<` and `>` become entities (no raw HTML), line breaks become `<br>`.
 */
export function escapeMarkdown(value: string): string {
  return value
    .replace(/[\\`*_{}[\]()#+!|~]/g, (c) => `\\${c}`)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\r\n|\r|\n/g, "<br>");
}

/** A heading per section and a GitHub-flavoured table of its rows; numeric columns right-aligned. */
export function renderMarkdown(doc: ReportDocument): Uint8Array {
  const out: string[] = [`# ${escapeMarkdown(doc.title)}`, ""];
  if (doc.description) out.push(escapeMarkdown(doc.description), "");
  out.push(`_${escapeMarkdown(periodLine(doc.period, doc.timeZone))}; generated ${doc.generatedAt.toISOString()}_`, "");
  if (doc.narrative) {
    out.push("## Summary", "", escapeMarkdown(doc.narrative.executiveSummary), "");
    for (const t of doc.narrative.keyTakeaways) out.push(`- ${escapeMarkdown(t)}`);
    if (doc.narrative.keyTakeaways.length) out.push("");
    out.push(`_Narrative by ${escapeMarkdown(doc.narrative.writer)}_`, "");
  }
  for (const s of doc.sections) {
    out.push(`## ${escapeMarkdown(s.title)}`, "");
    const text = doc.narrative?.sectionNarratives.find((n) => n.sectionId === s.id)?.narrative;
    if (text) out.push(escapeMarkdown(text), "");
    out.push(`| ${s.columns.map((c) => escapeMarkdown(columnHeader(c))).join(" | ")} |`);
    out.push(`| ${s.columns.map((c) => (isNumericColumn(c) ? "---:" : "---")).join(" | ")} |`);
    for (const row of s.rows) out.push(`| ${row.map((v) => escapeMarkdown(cellText(v))).join(" | ")} |`);
    if (!s.rows.length) out.push("", "_No rows._");
    out.push("");
  }
  return Buffer.from(out.join("\n"), "utf8");
}
