/**
 * The two doors of spec 4.11 share their gate: the tenant's opt-in
 * (`aiAnalyzerSettings.llmExplanationsEnabled`, 403 without it), then the trace, found only in the
 * caller's tenant (404 otherwise, also for an id that is not a uuid).
 */
import type { TenantContext } from "../platform/context.js";
import { forbidden, notFound } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { ReplayedTrace } from "../decisions/trace-reader.js";

/** The decisions domain's read model, as explanations use it (decisions.ts `readModel`). */
export interface ExplanationSources {
  replayTrace(tenantId: string, id: string): Promise<ReplayedTrace | null>;
  tenantSettings(tenantId: string): Promise<{ llm_explanations_enabled: boolean }>;
}

export class ExplanationAccess {
  constructor(private readonly sources: ExplanationSources) {}

  async requireOptIn(ctx: TenantContext): Promise<void> {
    if (!(await this.sources.tenantSettings(ctx.tenantId)).llm_explanations_enabled) {
      throw forbidden(
        "Decision explanations are not enabled for this tenant: an admin turns on aiAnalyzerSettings.llmExplanationsEnabled in the tenant settings",
        "EXPLANATIONS_NOT_ENABLED",
      );
    }
  }

  /** The trace by trace id or recommendation id, replayed with the task its decision scored. */
  async trace(ctx: TenantContext, id: string): Promise<ReplayedTrace> {
    const replayed = isUuid(id) ? await this.sources.replayTrace(ctx.tenantId, id) : null;
    if (!replayed) throw notFound("decision trace", id);
    return replayed;
  }
}
