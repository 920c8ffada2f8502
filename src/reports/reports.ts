import type { Sequelize } from "sequelize";
import { ReportService as ReportServiceDesc } from "../../gen/decisioning/v1/reports_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { ReportNarrativeWriter } from "../explanations/report-narrative-writer.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import type { Secrets } from "../platform/secrets.js";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { createDataSources, type ExperimentResultsReader } from "./data-sources.js";
import { renderArtifact } from "./render/render-artifact.js";
import { ReportComposer } from "./report-composer.js";
import { ReportDataStore } from "./report-data-store.js";
import { DownloadLinks } from "./report-download-links.js";
import { createSignedDownloadRoute } from "./report-download-route.js";
import { ReportRunService } from "./report-run-service.js";
import { ReportRunStore } from "./report-run-store.js";
import { expiredReportRunsJob } from "./expired-runs-job.js";
import { runOfDedupeKey, storedDelivery } from "./report-delivery.js";
import { createDueSchedulesJob } from "./report-schedule-job.js";
import { ReportScheduleService } from "./report-schedule-service.js";
import { ReportScheduleStore } from "./report-schedule-store.js";
import { ReportTemplateService, type ProviderDirectory } from "./report-template-service.js";
import { ReportTemplateStore } from "./report-template-store.js";

export interface ReportsOptions {
  db: Sequelize;
  audit: AuditLog;
  /** The experiments' results, for the experiment_results data source. */
  experiments: ExperimentResultsReader;
  /** The explanations' writers, for the narrative. */
  narratives: ReportNarrativeWriter;
  dispatcher: Dispatcher;
  providers: ProviderDirectory;
  /** The JWT signing secret, from which the webhooks' download links are signed. */
  secrets: Secrets;
  /** PUBLIC_URL: where the download links point. */
  publicUrl: string;
  rateLimits: RateLimitPolicy;
  /** RUN_LEASE_MS: how long a run's lease holds without renewal. */
  runLeaseMs: number;
  logger: Logger;
}

export interface Reports {
  services: ServiceRegistration[];
  /** `reports.due-schedules`: every minute (and on `/api/cron/tick`), each due schedule's slot once; `reports.expired-runs`, the runs whose process stopped. */
  jobs: ScheduledJob[];
  /** The signed form of the artifact download (report-download-route.ts). */
  httpRoutes: HttpRoute[];
  /** Deletes the tenant's templates (their schedules with them) and runs inside a workspace reset's transaction. */
  wipeTenant(t: Transaction, tenantId: string): Promise<void>;
  /** The templates and schedules that deliver through a notification provider, in words (notifications' ProviderUsers). */
  providerUsers(tenantId: string, providerId: string, t: Transaction): Promise<string[]>;
}

/** Reports (spec 2.9, 4.7; docs/reports.md), built once at start-up. */
export function createReports(o: ReportsOptions): Reports {
  const templateStore = new ReportTemplateStore(o.db);
  const scheduleStore = new ReportScheduleStore(o.db);
  const registry = createDataSources(new ReportDataStore(o.db), o.experiments);
  const templates = new ReportTemplateService(o.db, templateStore, o.audit, registry, o.providers);
  const runStore = new ReportRunStore(o.db);
  const links = new DownloadLinks(o.secrets, o.publicUrl);
  // A delivery the sweep ended after the run had recorded it as not delivered (docs/reports.md, "Delivery").
  o.dispatcher.onRedelivered("report", async (tenantId, dedupeKey, result) => {
    const runId = runOfDedupeKey(dedupeKey);
    if (runId) await runStore.recordRedelivery(tenantId, runId, storedDelivery(result));
  });
  const runs = new ReportRunService(templates, new ReportComposer(registry, o.narratives, renderArtifact), runStore, o.dispatcher, links, o.logger, o.runLeaseMs);
  const schedules = new ReportScheduleService(o.db, scheduleStore, templates, o.audit, o.providers);
  const impl = {
    listReportDataSources: () => templates.listReportDataSources(),
    listReportTemplates: (ctx, _req) => templates.listReportTemplates(ctx),
    createReportTemplate: (ctx, req) => templates.createReportTemplate(ctx, req),
    getReportTemplate: (ctx, req) => templates.getReportTemplate(ctx, req),
    updateReportTemplate: (ctx, req) => templates.updateReportTemplate(ctx, req),
    deleteReportTemplate: (ctx, req) => templates.deleteReportTemplate(ctx, req),
    previewReport: (ctx, req) => runs.previewReport(ctx, req),
    runReportNow: (ctx, req) => runs.runReportNow(ctx, req),
    listReportSchedules: (ctx, req) => schedules.listReportSchedules(ctx, req),
    createReportSchedule: (ctx, req) => schedules.createReportSchedule(ctx, req),
    getReportSchedule: (ctx, req) => schedules.getReportSchedule(ctx, req),
    updateReportSchedule: (ctx, req) => schedules.updateReportSchedule(ctx, req),
    deleteReportSchedule: (ctx, req) => schedules.deleteReportSchedule(ctx, req),
    listReportRuns: (ctx, req) => runs.listReportRuns(ctx, req),
    getReportRun: (ctx, req) => runs.getReportRun(ctx, req),
    downloadReportArtifact: (ctx, req) => runs.downloadReportArtifact(ctx, req),
  } satisfies Record<string, Handler>;
  return {
    services: [{ service: ReportServiceDesc, impl }],
    jobs: [createDueSchedulesJob({ schedules: scheduleStore, templates: templateStore, runs, logger: o.logger }), expiredReportRunsJob(runStore, o.logger)],
    httpRoutes: [createSignedDownloadRoute(links, runs, o.rateLimits, o.logger)],
    wipeTenant: async (t, tenantId) => {
      await runStore.deleteAll(t, tenantId);
      await templateStore.deleteAll(t, tenantId);
    },
    providerUsers: (tenantId, providerId, t) => templateStore.usingProvider(tenantId, providerId, t),
  };
}
