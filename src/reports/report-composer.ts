import type { ReportNarrativeWriter } from "../explanations/report-narrative-writer.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields } from "../platform/errors.js";
import { validateParams, type DataSourceRegistry, type SourceResult } from "./data-source-registry.js";
import type { StoredSection } from "./report-mapper.js";
import type { ReportDocument, RenderedArtifact, RenderArtifact } from "./report-document.js";
import type { ReportTemplateRow } from "./report-template-store.js";

/** A section longer than this is cut (docs/reports.md): a year of hourly volume is 8,784 rows. */
export const MAX_SECTION_ROWS = 10_000;
/** Data sources of one report computed at once (the database pool has 10 connections by default). */
const CONCURRENT_SOURCES = 3;

export interface ComposedReport {
  doc: ReportDocument;
  sections: StoredSection[];
  artifacts: RenderedArtifact[];
}

/**
 * Computes a template into a ReportDocument and renders it in the template's formats: each data
 * source once and all at once (sections may share one), then the narrative from the section data and the prompt.
 * The first source with a period gives the document's period and time zone (UTC without one).
 */
export class ReportComposer {
  constructor(
    private readonly registry: DataSourceRegistry,
    private readonly narratives: ReportNarrativeWriter,
    private readonly render: RenderArtifact,
  ) {}

  async compose(ctx: TenantContext, template: ReportTemplateRow, now: Date): Promise<ComposedReport> {
    const checked = template.data_sources.map((ref, i) => {
      const source = this.registry.get(ref.sourceKey)!;
      const { params, violations } = validateParams(source, ref.params, `dataSources[${i}].params`, now);
      if (violations.length) throw invalidFields(violations);
      return { source, params };
    });
    // A few at a time: each source is one aggregate query on its own pooled connection, so a
    // report's wall time nears its slowest source rather than their sum (docs/performance.md,
    // "Reports"), while the pool keeps connections for everything else.
    const results: SourceResult[] = new Array(checked.length);
    let next = 0;
    const worker = async () => {
      while (next < checked.length) {
        const i = next++;
        results[i] = await checked[i].source.compute(ctx, checked[i].params, now);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENT_SOURCES, checked.length) }, worker));
    const sections: StoredSection[] = template.sections.map((s) => {
      const ref = template.data_sources[s.dataSourceIndex];
      const source = this.registry.get(ref.sourceKey)!;
      return { id: s.id, title: s.title, sourceKey: source.key, columns: [...source.columns], rows: results[s.dataSourceIndex].rows.slice(0, MAX_SECTION_ROWS), chart: source.chart };
    });
    const period = results.find((r) => r.period)?.period ?? null;
    const narrative = template.narrative.enabled ? await this.narratives.write({ title: template.name, prompt: template.narrative.prompt, sections }) : null;
    const doc: ReportDocument = {
      title: template.name,
      description: template.description,
      generatedAt: now,
      timeZone: period?.timeZone ?? "UTC",
      period: period ? { from: period.from, to: period.to } : null,
      sections,
      narrative,
    };
    const artifacts: RenderedArtifact[] = [];
    for (const format of template.formats) artifacts.push(await this.render(doc, format));
    return { doc, sections, artifacts };
  }
}
