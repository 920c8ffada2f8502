import type { ReportDocument } from "../report-document.js";
import { cellText, columnHeader, isNumericColumn, periodLine } from "./cell-text.js";
import { chartSvg } from "./chart-svg.js";

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Every value that reaches the page goes through here: text, never markup. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

const STYLE = `
body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;color:#1f2933;margin:2rem auto;max-width:1100px;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d9e2ec;padding-bottom:.2rem}
.meta{color:#52606d;font-size:.85rem}.narrative{background:#f0f4f8;padding:.6rem 1rem;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:.85rem;margin-top:.6rem}
th,td{border:1px solid #d9e2ec;padding:.25rem .45rem;text-align:left;vertical-align:top}th{background:#f0f4f8}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.chart svg{max-width:100%;height:auto}`;

/**
 * One self-contained page: inline CSS, charts as inline SVG, no script, no external reference, so it
 * opens offline and in a mail client. Every value is HTML-escaped.
 */
export async function renderHtml(doc: ReportDocument): Promise<Uint8Array> {
  const e = escapeHtml;
  const parts: string[] = [
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<title>${e(doc.title)}</title><style>${STYLE}</style></head><body>`,
    `<h1>${e(doc.title)}</h1>`,
    doc.description ? `<p>${e(doc.description)}</p>` : "",
    `<p class="meta">${e(periodLine(doc.period, doc.timeZone))}; generated ${e(doc.generatedAt.toISOString())}</p>`,
  ];
  if (doc.narrative) {
    parts.push(`<section class="narrative"><h2>Summary</h2><p>${e(doc.narrative.executiveSummary)}</p>`);
    if (doc.narrative.keyTakeaways.length) parts.push(`<ul>${doc.narrative.keyTakeaways.map((t) => `<li>${e(t)}</li>`).join("")}</ul>`);
    parts.push(`<p class="meta">Narrative by ${e(doc.narrative.writer)}</p></section>`);
  }
  for (const s of doc.sections) {
    parts.push(`<section><h2>${e(s.title)}</h2>`);
    const text = doc.narrative?.sectionNarratives.find((n) => n.sectionId === s.id)?.narrative;
    if (text) parts.push(`<p class="narrative">${e(text)}</p>`);
    const svg = await chartSvg(s);
    if (svg) parts.push(`<div class="chart">${svg}</div>`);
    const cls = s.columns.map((c) => (isNumericColumn(c) ? ` class="n"` : ""));
    parts.push(`<table><thead><tr>${s.columns.map((c, i) => `<th${cls[i]}>${e(columnHeader(c))}</th>`).join("")}</tr></thead><tbody>`);
    for (const row of s.rows) parts.push(`<tr>${row.map((v, i) => `<td${cls[i]}>${e(cellText(v))}</td>`).join("")}</tr>`);
    parts.push(`</tbody></table>${s.rows.length ? "" : `<p class="meta">No rows.</p>`}</section>`);
  }
  parts.push("</body></html>");
  return Buffer.from(parts.join("\n"), "utf8");
}
