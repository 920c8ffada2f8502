import { test } from "node:test";
import assert from "node:assert/strict";
import { resolvePeriod, startOfLocalDay } from "../../src/reports/report-period.js";
import { neutralizeFormula } from "../../src/reports/render/csv-renderer.js";
import { escapeMarkdown } from "../../src/reports/render/markdown-renderer.js";
import { escapeHtml } from "../../src/reports/render/html-renderer.js";
import { cellText } from "../../src/reports/render/cell-text.js";
import { deterministicReportNarrative } from "../../src/explanations/report-narrative-writer.js";
import { nextSlot } from "../../src/scheduling/job-schedule.js";

test("local midnights across daylight-saving changes, in zones on both sides of UTC", () => {
  assert.equal(startOfLocalDay(2026, 3, 29, "Europe/Berlin").toISOString(), "2026-03-28T23:00:00.000Z");
  assert.equal(startOfLocalDay(2026, 3, 30, "Europe/Berlin").toISOString(), "2026-03-29T22:00:00.000Z");
  assert.equal(startOfLocalDay(2026, 10, 25, "Europe/Berlin").toISOString(), "2026-10-24T22:00:00.000Z");
  assert.equal(startOfLocalDay(2026, 3, 8, "America/New_York").toISOString(), "2026-03-08T05:00:00.000Z");
  assert.equal(startOfLocalDay(2026, 3, 9, "America/New_York").toISOString(), "2026-03-09T04:00:00.000Z");
  assert.equal(startOfLocalDay(2026, 1, 1, "Asia/Kolkata").toISOString(), "2025-12-31T18:30:00.000Z");
});

test("periods: dates are local days (to inclusive), instants are exact, days are whole days before today", () => {
  const p = resolvePeriod({ from: "2026-03-28", to: "2026-03-29", timezone: "Europe/Berlin" }, new Date(), "params");
  assert.deepEqual([p.from.toISOString(), p.to.toISOString()], ["2026-03-27T23:00:00.000Z", "2026-03-29T22:00:00.000Z"]);
  const days = resolvePeriod({ days: 2, timezone: "Europe/Berlin" }, new Date("2026-03-30T10:00:00Z"), "params");
  assert.deepEqual([days.from.toISOString(), days.to.toISOString()], ["2026-03-27T23:00:00.000Z", "2026-03-29T22:00:00.000Z"]);
  // 00:30 in Berlin is still the previous day in UTC: "today" is Berlin's.
  const early = resolvePeriod({ days: 1, timezone: "Europe/Berlin" }, new Date("2026-03-02T23:30:00Z"), "params");
  assert.equal(early.to.toISOString(), "2026-03-02T23:00:00.000Z");
  const exact = resolvePeriod({ from: "2026-03-01T12:00:00+05:30", to: "2026-03-01T13:00:00Z", timezone: "UTC" }, new Date(), "params");
  assert.equal(exact.from.toISOString(), "2026-03-01T06:30:00.000Z");
  assert.throws(() => resolvePeriod({ from: "2026-02-30", to: "2026-03-01", timezone: "UTC" }, new Date(), "p"), /p\.from/);
  assert.throws(() => resolvePeriod({ from: "2026-02-28T00:00:00Z", to: "2026-02-30T00:00:00Z", timezone: "UTC" }, new Date(), "p"), /p\.to/);
  assert.equal(resolvePeriod({ from: "2028-02-29T00:00:00Z", to: "2028-03-01T00:00:00Z", timezone: "UTC" }, new Date(), "p").from.toISOString(), "2028-02-29T00:00:00.000Z");
  assert.throws(() => resolvePeriod({ from: "2025-01-01", to: "2026-03-01", timezone: "UTC" }, new Date(), "p"), /at most 366 days/);
});

test("a schedule's next slot keeps its local time across the change (croner, the scheduler's reader)", () => {
  const daily = { cron: "0 9 * * *", timezone: "Europe/Berlin" };
  assert.equal(nextSlot(daily, new Date("2026-03-28T08:00:00Z"))!.toISOString(), "2026-03-29T07:00:00.000Z");
  assert.equal(nextSlot(daily, new Date("2026-10-24T07:00:00Z"))!.toISOString(), "2026-10-25T08:00:00.000Z");
});

test("CSV formula injection: text starting with = + - @ tab or CR is prefixed; other text is not", () => {
  for (const v of ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx"]) assert.equal(neutralizeFormula(v), `'${v}`);
  for (const v of ["plain", "1=1", "", "a-b"]) assert.equal(neutralizeFormula(v), v);
});

test("Markdown and HTML escaping leave no markup and no broken table", () => {
  assert.equal(escapeMarkdown("a | b\nc"), "a \\| b<br>c");
  assert.equal(escapeMarkdown("<script>alert(1)</script>"), "&lt;script&gt;alert\\(1\\)&lt;/script&gt;");
  assert.equal(escapeMarkdown("*bold* _it_ [x](y)"), "\\*bold\\* \\_it\\_ \\[x\\]\\(y\\)");
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  assert.deepEqual([cellText(null), cellText(true), cellText(2), cellText(1 / 3), cellText("x")], ["", "yes", "2", "0.3333", "x"]);
});

test("the deterministic narrative reads only the sections: totals and leaders, per section", () => {
  const n = deterministicReportNarrative({
    title: "Weekly",
    prompt: "ignored by the templates",
    sections: [
      { id: "o", title: "Offers", columns: [{ name: "offer", type: "string" }, { name: "impressions", type: "integer" }], rows: [["A", 3], ["B", 7]] },
      { id: "e", title: "Empty", columns: [{ name: "x", type: "integer" }], rows: [] },
    ],
  });
  assert.equal(n.writer, "deterministic");
  assert.equal(n.executiveSummary, "Weekly covers 2 sections: Offers, Empty.");
  assert.deepEqual(n.sectionNarratives, [
    { sectionId: "o", narrative: "Offers: 2 rows. impressions totals 10. The highest impressions is 7 (B)." },
    { sectionId: "e", narrative: "Empty: no data in this period." },
  ]);
  assert.deepEqual(n.keyTakeaways, ["The highest impressions is 7 (B)."]);
});

test("with an LLM configured, the narrative is the model's, fed only the sections and the prompt; a bad answer falls back", async () => {
  const { createServer } = await import("node:http");
  const { createReportNarrativeWriter } = await import("../../src/explanations/report-narrative-writer.js");
  const { createLogger } = await import("../../src/platform/logger.js");
  const requests: any[] = [];
  let answer = JSON.stringify({ executiveSummary: "Offer B leads.", sectionNarratives: [{ sectionId: "o", narrative: "B beats A." }, { sectionId: "zz", narrative: "dropped" }], keyTakeaways: ["B"] });
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ message: { content: answer } }] }));
    });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  try {
    const port = (server.address() as { port: number }).port;
    const writer = createReportNarrativeWriter({ baseUrl: `http://127.0.0.1:${port}`, model: "test-model", apiKey: null }, createLogger("silent"));
    const input = { title: "Weekly", prompt: "Who leads?", sections: [{ id: "o", title: "Offers", columns: [{ name: "offer", type: "string" as const }, { name: "n", type: "integer" as const }], rows: [["A", 3], ["B", 7]] }] };
    const n = await writer.write(input);
    assert.deepEqual(n, { executiveSummary: "Offer B leads.", sectionNarratives: [{ sectionId: "o", narrative: "B beats A." }], keyTakeaways: ["B"], writer: "test-model" });
    assert.match(requests[0].messages[0].content, /The reader asks: Who leads\?/);
    assert.deepEqual(JSON.parse(requests[0].messages[1].content).sections[0].rows, [["A", 3], ["B", 7]]);
    answer = "not json";
    assert.equal((await writer.write(input)).writer, "deterministic");
  } finally {
    server.close();
  }
});
