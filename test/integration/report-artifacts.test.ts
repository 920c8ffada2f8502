import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { createTemplate, seedDecision, seedOffer } from "../support/report-fixtures.js";

/** Each artifact of a preview parsed back with a reader of its format (poppler's pdftotext for the PDF). */
let svc: TestService;
let t: { tenantId: string; apiKey: string };
let preview: any;
let dir: string;
const HOSTILE = "<script>alert(1)</script>";
const FORMULA = "=HYPERLINK(\"http://evil\")";
const PIPE = "Pipe | and\nnewline";

before(async () => {
  svc = await startTestService();
  t = await svc.createTenant("reports-artifacts");
  dir = mkdtempSync(join(tmpdir(), "report-artifacts-"));
  const hostile = await seedOffer(svc, t.tenantId, HOSTILE);
  const formula = await seedOffer(svc, t.tenantId, FORMULA);
  const pipe = await seedOffer(svc, t.tenantId, PIPE);
  await seedDecision(svc, t.tenantId, { at: "2026-03-02T10:00:00Z", offers: [{ offerId: hostile }, { offerId: formula }, { offerId: pipe }], qualified: 3, suppressed: 0, rejected: 1,
    outcomes: [{ rank: 1, outcome: "click" }, { rank: 1, outcome: "conversion", value: 1234.5 }] });
  await seedDecision(svc, t.tenantId, { at: "2026-03-02T11:00:00Z", offers: [{ offerId: hostile }], qualified: 2, suppressed: 1, rejected: 1 });
  const template = await createTemplate(svc, t.apiKey, {
    name: "Artifact check",
    description: "Every format, parsed back",
    dataSources: [
      { sourceKey: "offer_performance", params: { from: "2026-03-01", to: "2026-03-03" } },
      { sourceKey: "decision_volume", params: { from: "2026-03-01", to: "2026-03-03", granularity: "hour" } },
    ],
    sections: [{ id: "offers", title: "Offers section", dataSourceIndex: 0 }, { id: "volume", title: "Hourly volume", dataSourceIndex: 1 }],
    formats: ["pdf", "csv", "markdown", "html"],
    narrative: { enabled: true, prompt: "Which offer leads?" },
  });
  const res = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/preview`, { key: t.apiKey, body: {} });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  preview = res.body;
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await svc.stop();
});

const artifact = (format: string) => {
  const a = preview.artifacts.find((x: any) => x.format === format);
  assert.ok(a, `${format} artifact`);
  const bytes = Buffer.from(a.base64, "base64");
  assert.equal(bytes.length, a.bytes);
  return { ...a, data: bytes };
};

test("the preview answers sections, the narrative naming its writer, and every format in base64; nothing is stored", async () => {
  assert.deepEqual(preview.sections.map((s: any) => s.id), ["offers", "volume"]);
  assert.deepEqual(preview.artifacts.map((a: any) => [a.format, a.mimeType]), [
    ["pdf", "application/pdf"], ["csv", "text/csv; charset=utf-8"], ["markdown", "text/markdown; charset=utf-8"], ["html", "text/html; charset=utf-8"],
  ]);
  assert.match(preview.artifacts[0].fileName, /^artifact-check-\d{4}-\d{2}-\d{2}\.pdf$/);
  assert.equal(preview.narrative.writer, "deterministic");
  assert.match(preview.narrative.executiveSummary, /Offers section, Hourly volume/);
  assert.deepEqual(preview.narrative.sectionNarratives.map((n: any) => n.sectionId), ["offers", "volume"]);
  assert.match(preview.narrative.sectionNarratives[1].narrative, /decisions totals 2/);
  assert.equal((await svc.sql("SELECT count(*)::int AS n FROM report_runs WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
  assert.equal((await svc.sql("SELECT count(*)::int AS n FROM notification_deliveries WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
});

test("pdf: a real document whose text shows the titles and numbers, with its fonts embedded, paged when long", () => {
  const { data } = artifact("pdf");
  assert.equal(data.subarray(0, 5).toString(), "%PDF-");
  const file = join(dir, "r.pdf");
  writeFileSync(file, data);
  const text = execFileSync("pdftotext", ["-layout", file, "-"], { encoding: "utf8" });
  for (const expected of ["Artifact check", "Offers section", "Hourly volume", HOSTILE, "1234.5", "2026-03-02T10:00", "Narrative by deterministic"]) {
    assert.ok(text.includes(expected), `pdf text has ${expected}`);
  }
  const fonts = execFileSync("pdffonts", [file], { encoding: "utf8" }).split("\n").slice(2).filter(Boolean);
  assert.ok(fonts.length > 0);
  for (const line of fonts) assert.match(line, /DejaVu.*\byes\s+yes\b/, `embedded subset: ${line}`);
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync("pdfinfo", [file], { encoding: "utf8" }))![1]);
  assert.ok(pages >= 4, `title page, offers, and the 72 hourly rows over more than one page: ${pages}`);
});

test("csv: RFC 4180 with a BOM, one block per section, formulas neutralized, numbers left numbers", () => {
  const { data } = artifact("csv");
  assert.deepEqual([...data.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assert.ok(data.toString("utf8").includes("\r\n"));
  const records: string[][] = parse(data, { bom: true, relax_column_count: true });
  assert.deepEqual(records[0], ["Artifact check"]);
  assert.equal(records[1][0], "period");
  assert.deepEqual(records[2], [""]);
  assert.deepEqual(records[3], ["Offers section"]);
  assert.deepEqual(records[4], ["offer", "offerId", "recommendations", "impressions", "clicks", "positiveResponses", "negativeResponses", "ctr (%)", "conversionRate (%)", "revenue"]);
  const offers = records.slice(5, 8);
  assert.deepEqual(offers.map((r) => r[0]).sort(), [`'${FORMULA}`, HOSTILE, PIPE].sort());
  const hostileRow = offers.find((r) => r[0] === HOSTILE)!;
  assert.deepEqual(hostileRow.slice(2), ["2", "2", "1", "1", "0", "50", "50", "1234.5"]);
  assert.deepEqual(records[8], [""]);
  assert.deepEqual(records[9], ["Hourly volume"]);
  assert.deepEqual(records[10], ["period", "decisions", "emptyCandidateDecisions", "degradedDecisions"]);
  assert.equal(records.length, 11 + 72);
});

test("html: self-contained, inline SVG charts, every value escaped: the hostile name is text", () => {
  const html: string = artifact("html").data.toString("utf8");
  assert.ok(!/<script/i.test(html), "no script element anywhere");
  assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"), "the value shown as text");
  assert.ok(!/(src|href)=["']?https?:/i.test(html), "no external reference");
  assert.ok(html.includes("<style>"));
  assert.ok((html.match(/<svg/g) ?? []).length >= 2, "one chart per section");
  assert.ok(html.includes("<td class=\"n\">1234.5</td>"));
});

test("markdown: a heading per section and tables whose every row has the header's column count", () => {
  const md: string = artifact("markdown").data.toString("utf8");
  assert.ok(md.includes("## Offers section"));
  assert.ok(md.includes("## Hourly volume"));
  assert.ok(!md.includes("<script>"));
  const cells = (line: string) => line.replace(/\\\|/g, "").split("|").length - 2;
  const tables = md.split("\n## ").slice(1).map((block) => block.split("\n").filter((l) => l.startsWith("|")));
  const offers = tables.find((rows) => rows.length === 5)!;
  assert.ok(offers, md);
  for (const row of offers) assert.equal(cells(row), 10, row);
  assert.ok(offers.some((row) => row.includes("Pipe \\| and<br>newline")));
  const volume = tables.find((rows) => rows.length === 74)!;
  for (const row of volume) assert.equal(cells(row), 4, row);
});
