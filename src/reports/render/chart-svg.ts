import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { ReportSection } from "../report-document.js";
import { isNumericColumn } from "./cell-text.js";

/** More categories than this make an unreadable chart; the table beside it has every row. */
const MAX_CHART_ROWS = 40;

/**
 * The section's chart as a standalone SVG string (vega-lite compiled to vega, rendered headless
 * without a canvas), or null when the section has nothing to chart: no rows, or no numeric series.
 * Vega escapes the text it writes into the SVG, so values reach the markup as text.
 */
export async function chartSvg(section: ReportSection): Promise<string | null> {
  const chart = section.chart;
  if (!chart || !section.rows.length) return null;
  const index = new Map(section.columns.map((c, i) => [c.name, i]));
  const xAt = index.get(chart.x);
  const series = chart.y.filter((y) => index.has(y) && isNumericColumn(section.columns[index.get(y)!]));
  if (xAt === undefined || !series.length) return null;
  const values = section.rows.slice(0, MAX_CHART_ROWS).flatMap((row, i) =>
    series.map((name) => ({ category: String(row[xAt] ?? ""), order: i, series: name, value: Number(row[index.get(name)!] ?? 0) })),
  );
  const spec: TopLevelSpec = {
    width: 480,
    height: 200,
    background: "white",
    data: { values },
    mark: chart.kind === "bar" ? { type: "bar" } : { type: "line", point: true },
    encoding: {
      x: { field: "category", type: "ordinal", sort: { field: "order" }, title: chart.x, axis: { labelLimit: 120, labelAngle: -40 } },
      y: { field: "value", type: "quantitative", title: null },
      color: { field: "series", type: "nominal", title: null },
      ...(chart.kind === "bar" && series.length > 1 ? { xOffset: { field: "series" } } : {}),
    },
    config: { font: "DejaVu Sans" },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
