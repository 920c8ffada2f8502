import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { EmptySchema, ListValueSchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListReportSchedulesResponseSchema,
  type ListReportSchedulesRequest,
  type ListReportSchedulesResponse,
  type ReportIdRequest,
  type ReportSchedule,
  type ReportScheduleWrite,
} from "../../gen/decisioning/v1/reports_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { nextSlot, validateSchedule } from "../scheduling/job-schedule.js";
import { reportScheduleSnapshot, toReportSchedule } from "./report-mapper.js";
import type { ReportScheduleRow, ReportScheduleStore, ReportScheduleValues } from "./report-schedule-store.js";
import { validateDestinations, type ProviderDirectory, type ReportTemplateService } from "./report-template-service.js";

const MAX_NAME = 255;
const MAX_CRON = 200;

/**
 * Report schedules (spec 2.9, 4.7). `nextRunAt` comes from croner, the scheduler's own reader of
 * cron expressions (src/scheduling/job-schedule.ts), so what the API promises is what runs; it is
 * recomputed when cronExpression or timezone changes, and when a disabled schedule is enabled.
 */
export class ReportScheduleService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: ReportScheduleStore,
    private readonly templates: ReportTemplateService,
    private readonly audit: AuditLog,
    private readonly providers: ProviderDirectory,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async listReportSchedules(ctx: TenantContext, req: ListReportSchedulesRequest): Promise<ListReportSchedulesResponse> {
    // A filter is looked up, not parsed (docs/errors.md): one that names no template matches nothing.
    if (req.templateId && !isUuid(req.templateId)) return create(ListReportSchedulesResponseSchema, { data: [] });
    return create(ListReportSchedulesResponseSchema, { data: (await this.store.list(ctx.tenantId, req.templateId || null)).map(toReportSchedule) });
  }

  async getReportSchedule(ctx: TenantContext, req: ReportIdRequest): Promise<ReportSchedule> {
    return toReportSchedule(await this.mustFind(ctx.tenantId, req.id));
  }

  async createReportSchedule(ctx: TenantContext, req: ReportScheduleWrite): Promise<ReportSchedule> {
    const values = await this.validate(ctx, req, null);
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      // Under the write lock: a template deleted meanwhile is a 404, never an orphan (the foreign key agrees).
      await this.templates.mustFind(ctx.tenantId, values.template_id, t);
      const created = await this.store.insert(t, ctx.tenantId, newId(), values);
      await this.record(t, ctx, "create", null, created);
      return created;
    });
    return toReportSchedule(row);
  }

  async updateReportSchedule(ctx: TenantContext, req: ReportScheduleWrite): Promise<ReportSchedule> {
    const current = await this.mustFind(ctx.tenantId, req.id);
    const values = await this.validate(ctx, req, current);
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (values.template_id !== before.template_id) await this.templates.mustFind(ctx.tenantId, values.template_id, t);
      const after = await this.store.update(t, ctx.tenantId, before.id, values);
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toReportSchedule(row);
  }

  async deleteReportSchedule(ctx: TenantContext, req: ReportIdRequest): Promise<Empty> {
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      await this.store.delete(t, ctx.tenantId, before.id);
      await this.record(t, ctx, "delete", before, null);
    });
    return create(EmptySchema);
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ReportScheduleRow> {
    const row = isUuid(id) ? await this.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("report schedule", id);
    return row;
  }

  /**
   * Spec 7 order: an unknown or foreign template is 404, then bad fields are 400, then an invalid
   * cron expression is 422 (reason INVALID_CRON_EXPRESSION), an unknown time zone 400 (INVALID_TIMEZONE).
   */
  private async validate(ctx: TenantContext, req: ReportScheduleWrite, current: ReportScheduleRow | null): Promise<ReportScheduleValues> {
    const violations: FieldViolation[] = [];
    const required = (field: string, present: boolean) => {
      if (!current && !present) violations.push({ field, message: "is required" });
      return present;
    };
    let templateId = current?.template_id ?? "";
    let destinations = current?.destinations;
    if (required("templateId", req.templateId !== undefined)) {
      const template = await this.templates.mustFind(ctx.tenantId, req.templateId!);
      templateId = template.id;
      destinations ??= template.destinations;
    }
    let name = current?.name ?? "";
    if (required("name", req.name !== undefined)) {
      name = req.name!.trim();
      if (!name || name.length > MAX_NAME) violations.push({ field: "name", message: `must be 1-${MAX_NAME} characters` });
    }
    const cron = (req.cronExpression ?? current?.cron_expression ?? "").trim();
    required("cronExpression", req.cronExpression !== undefined);
    if (cron.length > MAX_CRON) violations.push({ field: "cronExpression", message: `must be at most ${MAX_CRON} characters` });
    const timezone = (req.timezone ?? current?.timezone ?? "").trim();
    required("timezone", req.timezone !== undefined);
    if (req.destinations !== undefined) {
      const checked = await validateDestinations(this.providers, ctx.tenantId, toJson(ListValueSchema, req.destinations) as JsonValue[], "destinations");
      violations.push(...checked.violations);
      destinations = checked.ids;
    }
    if (violations.length) throw invalidFields(violations);
    validateSchedule({ cron, timezone }, "schedule", { cron: "cronExpression", timezone: "timezone" });

    const enabled = req.enabled ?? current?.enabled ?? true;
    const timing = !current || cron !== current.cron_expression || timezone !== current.timezone || (enabled && !current.enabled);
    return {
      template_id: templateId,
      name,
      cron_expression: cron,
      timezone,
      destinations: destinations ?? [],
      enabled,
      next_run_at: timing ? nextSlot({ cron, timezone }, this.now()) : current!.next_run_at,
    };
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: ReportScheduleRow | null, after: ReportScheduleRow | null) {
    const row = (after ?? before)!;
    return this.audit.record(t, ctx, {
      action,
      entityType: "report_schedule",
      entityId: row.id,
      entityName: row.name,
      before: before ? reportScheduleSnapshot(before) : null,
      after: after ? reportScheduleSnapshot(after) : null,
      entityVersion: null,
    });
  }
}
