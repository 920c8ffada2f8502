import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import {
  ListReportRunsResponseSchema,
  ReportPreviewSchema,
  ReportRunSchema,
  ReportRunSummarySchema,
  RunReportNowResponseSchema,
  type DownloadReportArtifactRequest,
  type ListReportRunsRequest,
  type ListReportRunsResponse,
  type ReportIdRequest,
  type ReportPreview,
  type ReportRun,
  type ReportRunRequest,
  type ReportRunSummary,
  type RunReportNowResponse,
} from "../../gen/decisioning/v1/reports_pb.js";
import { download } from "../audit/audit-service.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { TenantContext } from "../platform/context.js";
import { invalidField, isAppError, notFound } from "../platform/errors.js";
import { pageSize } from "../platform/pagination.js";
import { isUuid, newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import { RunLease } from "../platform/run-lease.js";
import type { ReportComposer } from "./report-composer.js";
import { deliveredStatus, deliverRun } from "./report-delivery.js";
import type { DownloadLinks } from "./report-download-links.js";
import { REPORT_FORMATS, type ReportFormat } from "./report-document.js";
import { toArtifactInfo, toDeliveryResult, toNarrativeMessage, toSectionData, type ArtifactMeta, type StoredDelivery } from "./report-mapper.js";
import type { ReportRunRow, ReportRunStatus, ReportRunStore } from "./report-run-store.js";
import type { ReportTemplateService } from "./report-template-service.js";
import type { ReportTemplateRow } from "./report-template-store.js";

/** Spec 8: report runs page size 1-200, default 50. */
export const MAX_RUNS_PAGE = 200;
export const DEFAULT_RUNS_PAGE = 50;
/**
 * The largest artifact stored with a run (docs/reports.md): PostgreSQL holds it in a bytea beside
 * the run, and a download reads it whole. A report that renders larger fails instead of storing it.
 */
export const REPORT_ARTIFACT_MAX_BYTES = 20 * 1024 * 1024;

export interface RunTrigger {
  triggeredBy: "manual" | "cron";
  scheduleId: string | null;
  slot: Date | null;
  destinations: readonly string[];
}

export interface RunOutcome {
  run: ReportRunRow;
  artifacts: ArtifactMeta[];
}


/**
 * Preview, run-now, the runs' reads and artifact downloads (spec 4.7). A run is recorded as
 * `running` first, so a crash leaves a trace; its sections, narrative and artifacts are stored in
 * one transaction before anything is sent, so a delivered download path always resolves.
 */
export class ReportRunService {
  constructor(
    private readonly templates: ReportTemplateService,
    private readonly composer: ReportComposer,
    private readonly runs: ReportRunStore,
    private readonly dispatcher: Dispatcher,
    private readonly links: DownloadLinks,
    private readonly logger: Logger,
    /** RUN_LEASE_MS: how long a run's lease holds without renewal (docs/reports.md, "Runs whose process stopped"). */
    private readonly leaseMs: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Spec 4.7: once, with no dispatch and nothing stored. */
  async previewReport(ctx: TenantContext, req: ReportRunRequest): Promise<ReportPreview> {
    const template = await this.templates.mustFind(ctx.tenantId, req.id);
    const { doc, sections, artifacts } = await this.composer.compose(ctx, template, this.now());
    return create(ReportPreviewSchema, {
      sections: sections.map(toSectionData),
      narrative: doc.narrative ? toNarrativeMessage(doc.narrative) : undefined,
      artifacts: artifacts.map((a) => ({
        format: a.format, mimeType: a.mimeType, fileName: a.fileName, base64: Buffer.from(a.bytes).toString("base64"), bytes: a.bytes.byteLength,
      })),
      timeZone: doc.timeZone,
      periodFrom: doc.period ? timestampFromDate(doc.period.from) : undefined,
      periodTo: doc.period ? timestampFromDate(doc.period.to) : undefined,
    });
  }

  /** Spec 4.7: runs synchronously, stores and delivers to the template's destinations; 202. */
  async runReportNow(ctx: TenantContext, req: ReportRunRequest): Promise<RunReportNowResponse> {
    const template = await this.templates.mustFind(ctx.tenantId, req.id);
    const { run, artifacts } = (await this.run(ctx, template, { triggeredBy: "manual", scheduleId: null, slot: null, destinations: template.destinations }))!;
    return create(RunReportNowResponseSchema, {
      runId: run.id,
      status: run.status,
      artifacts: artifacts.map((a) => toArtifactInfo(run.id, a)),
      deliveryResults: run.delivery_results.map(toDeliveryResult),
      error: run.error ?? undefined,
    });
  }

  /**
   * One run of a template: null when a scheduled slot already has its run. A report that cannot be
   * computed or rendered ends `failed` with the reason; a 400-class reason (a parameter that no
   * longer holds, such as a deleted experiment) is stated, anything else is logged and summarized.
   */
  async run(ctx: TenantContext, template: ReportTemplateRow, trigger: RunTrigger): Promise<RunOutcome | null> {
    const started = await this.runs.start(ctx.tenantId, { id: newId(), templateId: template.id, ...trigger }, this.leaseMs);
    if (!started) return null;
    // A run that the sweep ended while this process stalled keeps the sweep's end (finish answers it).
    const lease = new RunLease({ renew: () => this.runs.renewLease(ctx.tenantId, started.id, this.leaseMs), leaseMs: this.leaseMs, logger: this.logger, kind: "report run", runId: started.id });
    try {
      return await this.produce(ctx, template, trigger, started.id);
    } finally {
      await lease.stop();
    }
  }

  /** What a run does under its lease: compose, store, deliver, and record how it ended. */
  private async produce(ctx: TenantContext, template: ReportTemplateRow, trigger: RunTrigger, runId: string): Promise<RunOutcome> {
    let artifacts: ArtifactMeta[] = [];
    try {
      const composed = await this.composer.compose(ctx, template, this.now());
      const tooLarge = composed.artifacts.find((a) => a.bytes.byteLength > REPORT_ARTIFACT_MAX_BYTES);
      if (tooLarge) throw invalidField("formats", `the ${tooLarge.format} artifact is ${tooLarge.bytes.byteLength} bytes, over the ${REPORT_ARTIFACT_MAX_BYTES}-byte limit`);
      await this.runs.saveProduct(ctx.tenantId, runId, {
        sections: composed.sections,
        narrative: composed.doc.narrative,
        timeZone: composed.doc.timeZone,
        period: composed.doc.period,
        artifacts: composed.artifacts,
      });
      artifacts = composed.artifacts.map((a) => ({ format: a.format, mimeType: a.mimeType, fileName: a.fileName, bytes: a.bytes.byteLength }));
      const deliveries = await deliverRun(this.dispatcher, this.links, trigger.destinations, {
        tenantId: ctx.tenantId,
        runId: runId,
        templateId: template.id,
        scheduleId: trigger.scheduleId,
        title: template.name,
        triggeredBy: trigger.triggeredBy,
        period: composed.doc.period,
        timeZone: composed.doc.timeZone,
        artifacts: composed.artifacts,
      });
      return { run: await this.runs.finish(ctx.tenantId, runId, deliveredStatus(deliveries), deliveries, null), artifacts };
    } catch (err) {
      const reason = isAppError(err) && err.code === "INVALID_ARGUMENT" ? err.message : "the report could not be produced (see the service log)";
      if (!isAppError(err)) this.logger.error({ err, runId: runId, templateId: template.id }, "report run failed");
      return { run: await this.runs.finish(ctx.tenantId, runId, "failed", [], reason), artifacts };
    }
  }

  async listReportRuns(ctx: TenantContext, req: ListReportRunsRequest): Promise<ListReportRunsResponse> {
    const limit = pageSize(req.limit, MAX_RUNS_PAGE, DEFAULT_RUNS_PAGE);
    const offset = req.offset ?? 0;
    if (!Number.isInteger(offset) || offset < 0) throw invalidField("offset", "must be a whole number of at least 0");
    // A filter is looked up, not parsed (docs/errors.md): one that names no template matches nothing.
    const { rows, total } =
      req.templateId && !isUuid(req.templateId) ? { rows: [], total: 0 } : await this.runs.page(ctx.tenantId, req.templateId || null, limit, offset);
    const meta = await this.runs.artifactMeta(ctx.tenantId, rows.map((r) => r.id));
    return create(ListReportRunsResponseSchema, {
      data: rows.map((r) => toRunSummary(r, meta.get(r.id) ?? [])),
      pagination: { total, limit, offset },
    });
  }

  async getReportRun(ctx: TenantContext, req: ReportIdRequest): Promise<ReportRun> {
    const row = isUuid(req.id) ? await this.runs.find(ctx.tenantId, req.id) : null;
    if (!row) throw notFound("report run", req.id);
    const meta = (await this.runs.artifactMeta(ctx.tenantId, [row.id])).get(row.id) ?? [];
    const { $typeName: _, ...summary } = toRunSummary(row, meta);
    return create(ReportRunSchema, {
      ...summary,
      sectionsData: row.sections_data.map(toSectionData),
      narrativeOutput: row.narrative_output ? toNarrativeMessage(row.narrative_output) : undefined,
      timeZone: row.time_zone,
      periodFrom: row.period_from ? timestampFromDate(row.period_from) : undefined,
      periodTo: row.period_to ? timestampFromDate(row.period_to) : undefined,
    });
  }

  /** Spec 4.7: the file; 404 for another tenant's run and for a format that was not rendered. */
  downloadReportArtifact(ctx: TenantContext, req: DownloadReportArtifactRequest): Promise<HttpBody> {
    return this.artifactFile(ctx.tenantId, req.id, req.format);
  }

  /**
   * One stored artifact as the file a download answers, for the authenticated route and the signed
   * link alike (report-download-route.ts): 400 for a format that does not exist, 404 for a run of
   * another tenant or a format that was not rendered.
   */
  async artifactFile(tenantId: string, runId: string, format: string): Promise<HttpBody> {
    if (!REPORT_FORMATS.includes(format as ReportFormat)) throw invalidField("format", `must be one of ${REPORT_FORMATS.join(", ")}`);
    const artifact = isUuid(runId) ? await this.runs.artifact(tenantId, runId, format) : null;
    if (!artifact) throw notFound(`${format} artifact of report run`, runId);
    return download(new Uint8Array(artifact.content), artifact.mimeType, artifact.fileName);
  }
}

function toRunSummary(r: ReportRunRow, artifacts: readonly ArtifactMeta[]): ReportRunSummary {
  return create(ReportRunSummarySchema, {
    id: r.id,
    templateId: r.template_id,
    scheduleId: r.schedule_id ?? undefined,
    status: r.status,
    triggeredBy: r.triggered_by,
    startedAt: timestampFromDate(r.started_at),
    completedAt: r.completed_at ? timestampFromDate(r.completed_at) : undefined,
    durationMs: r.duration_ms ?? undefined,
    deliveryResults: r.delivery_results.map(toDeliveryResult),
    artifacts: artifacts.map((a) => toArtifactInfo(r.id, a)),
    error: r.error ?? undefined,
  });
}
