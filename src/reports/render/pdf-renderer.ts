import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import PDFDocument from "pdfkit";
import SVGtoPDF from "svg-to-pdfkit";
import type { ReportDocument, ReportSection } from "../report-document.js";
import { cellText, columnHeader, isNumericColumn, periodLine } from "./cell-text.js";
import { chartSvg } from "./chart-svg.js";

/**
 * DejaVu Sans from the dejavu-fonts-ttf package, embedded (subset) in every PDF: the file renders
 * the same on every reader, and covers far more of Unicode than the 14 standard PDF fonts, which
 * are not embedded and only know Latin-1.
 */
const FONT_DIR = join(dirname(createRequire(import.meta.url).resolve("dejavu-fonts-ttf/package.json")), "ttf");
let fonts: { regular: Buffer; bold: Buffer } | null = null;
function loadFonts() {
  fonts ??= { regular: readFileSync(join(FONT_DIR, "DejaVuSans.ttf")), bold: readFileSync(join(FONT_DIR, "DejaVuSans-Bold.ttf")) };
  return fonts;
}

const MARGIN = 40;
const ROW_HEIGHT = 14;
const TABLE_FONT = 7.5;

/** Lays a section's table out in rows of fixed height, repeating the header on each new page. */
function drawTable(pdf: PDFKit.PDFDocument, s: ReportSection): void {
  const width = pdf.page.width - 2 * MARGIN;
  const colWidth = width / Math.max(1, s.columns.length);
  const bottom = () => pdf.page.height - MARGIN;
  const drawRow = (cells: string[], header: boolean) => {
    if (pdf.y + ROW_HEIGHT > bottom()) {
      pdf.addPage();
      if (!header) drawRow(s.columns.map(columnHeader), true);
    }
    const y = pdf.y;
    if (header) pdf.rect(MARGIN, y, width, ROW_HEIGHT).fill("#e4e7eb").fillColor("black");
    pdf.font(header ? "bold" : "body").fontSize(TABLE_FONT);
    cells.forEach((text, i) => {
      pdf.text(text, MARGIN + i * colWidth + 2, y + 3, {
        width: colWidth - 4,
        height: ROW_HEIGHT - 3,
        ellipsis: true,
        lineBreak: false,
        align: isNumericColumn(s.columns[i]) ? "right" : "left",
      });
    });
    pdf.moveTo(MARGIN, y + ROW_HEIGHT).lineTo(MARGIN + width, y + ROW_HEIGHT).lineWidth(0.3).stroke("#cbd2d9");
    pdf.x = MARGIN;
    pdf.y = y + ROW_HEIGHT;
  };
  drawRow(s.columns.map(columnHeader), true);
  for (const row of s.rows) drawRow(row.map(cellText), false);
  if (!s.rows.length) pdf.font("body").fontSize(9).text("No rows.", MARGIN, pdf.y + 4);
}

/**
 * A landscape A4 document (pdfkit): a title page with the period and the narrative's summary, then
 * one page per section with its narrative, its chart (vega-lite SVG drawn as vectors by
 * svg-to-pdfkit, in the embedded font) and its table, paged when long.
 */
export async function renderPdf(doc: ReportDocument): Promise<Uint8Array> {
  const { regular, bold } = loadFonts();
  const charts = await Promise.all(doc.sections.map(chartSvg));
  const pdf = new PDFDocument({
    size: "A4",
    layout: "landscape",
    margin: MARGIN,
    info: { Title: doc.title, Subject: doc.description, Creator: "decisioning-service reports", CreationDate: doc.generatedAt },
  });
  pdf.registerFont("body", regular);
  pdf.registerFont("bold", bold);
  const chunks: Buffer[] = [];
  pdf.on("data", (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    pdf.on("end", resolve);
    pdf.on("error", reject);
  });

  pdf.font("bold").fontSize(24).text(doc.title, { align: "left" });
  pdf.moveDown(0.5);
  pdf.font("body").fontSize(11);
  if (doc.description) pdf.text(doc.description).moveDown(0.5);
  pdf.fontSize(9).fillColor("#52606d").text(periodLine(doc.period, doc.timeZone)).text(`Generated ${doc.generatedAt.toISOString()}`).fillColor("black");
  pdf.moveDown();
  pdf.font("bold").fontSize(12).text("Sections");
  pdf.font("body").fontSize(10);
  doc.sections.forEach((s, i) => pdf.text(`${i + 1}. ${s.title}`));
  if (doc.narrative) {
    pdf.moveDown().font("bold").fontSize(12).text("Summary");
    pdf.font("body").fontSize(10).text(doc.narrative.executiveSummary);
    for (const t of doc.narrative.keyTakeaways) pdf.text(`• ${t}`, { indent: 10 });
    pdf.fontSize(8).fillColor("#52606d").text(`Narrative by ${doc.narrative.writer}`).fillColor("black");
  }

  doc.sections.forEach((s, i) => {
    pdf.addPage();
    pdf.font("bold").fontSize(16).text(s.title);
    pdf.moveDown(0.3);
    const text = doc.narrative?.sectionNarratives.find((n) => n.sectionId === s.id)?.narrative;
    if (text) pdf.font("body").fontSize(9).text(text).moveDown(0.3);
    const svg = charts[i];
    if (svg) {
      const y = pdf.y;
      SVGtoPDF(pdf, svg, MARGIN, y, { width: 480, height: 200, preserveAspectRatio: "xMinYMin meet", fontCallback: () => "body" });
      pdf.x = MARGIN;
      pdf.y = y + 210;
    }
    drawTable(pdf, s);
  });
  pdf.end();
  await done;
  return Buffer.concat(chunks);
}
