import { create, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { EmptySchema, ListValueSchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListReportDataSourcesResponseSchema,
  ListReportTemplatesResponseSchema,
  type ListReportDataSourcesResponse,
  type ListReportTemplatesResponse,
  type ReportIdRequest,
  type ReportTemplate,
  type ReportTemplateWrite,
} from "../../gen/decisioning/v1/reports_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { validateParams, type DataSourceRegistry } from "./data-source-registry.js";
import { REPORT_FORMATS, type ReportFormat } from "./report-document.js";
import { reportTemplateSnapshot, toDataSourceInfo, toReportTemplate } from "./report-mapper.js";
import type { ReportTemplateRow, ReportTemplateStore, ReportTemplateValues, TemplateDataSource, TemplateSection } from "./report-template-store.js";

/** The notification providers' read model: which of these ids name providers of the tenant. */
export interface ProviderDirectory {
  existing(tenantId: string, ids: readonly string[]): Promise<ReadonlySet<string>>;
}

const MAX_NAME = 255;
const MAX_DESCRIPTION = 2_000;
const MAX_PROMPT = 4_000;
const MAX_DATA_SOURCES = 20;
const MAX_SECTIONS = 50;
export const MAX_DESTINATIONS = 20;
const SECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Destination provider ids at `field`: UUIDs of providers of this tenant (spec 7: a foreign
 * reference in a body is 400). Shared by templates (`filters.destinations`) and schedules.
 */
export async function validateDestinations(
  providers: ProviderDirectory,
  tenantId: string,
  items: readonly JsonValue[],
  field: string,
): Promise<{ ids: string[]; violations: FieldViolation[] }> {
  const violations: FieldViolation[] = [];
  if (items.length > MAX_DESTINATIONS) violations.push({ field, message: `must name at most ${MAX_DESTINATIONS} providers` });
  const ids: string[] = [];
  items.forEach((item, i) => {
    if (typeof item === "string" && isUuid(item)) ids.push(item.toLowerCase());
    else violations.push({ field: `${field}[${i}]`, message: "must be a notification provider id" });
  });
  if (!violations.length && ids.length) {
    const existing = await providers.existing(tenantId, ids);
    ids.forEach((id, i) => existing.has(id) || violations.push({ field: `${field}[${i}]`, message: `unknown notification provider ${id}` }));
  }
  return { ids: [...new Set(ids)], violations };
}

/**
 * Report templates (spec 2.9, 4.7): CRUD with every write under the tenant's write lock and in the
 * audit log, and the data-source registry's public description.
 */
export class ReportTemplateService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: ReportTemplateStore,
    private readonly audit: AuditLog,
    private readonly registry: DataSourceRegistry,
    private readonly providers: ProviderDirectory,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async listReportDataSources(): Promise<ListReportDataSourcesResponse> {
    return create(ListReportDataSourcesResponseSchema, { data: this.registry.all().map(toDataSourceInfo) });
  }

  async listReportTemplates(ctx: TenantContext): Promise<ListReportTemplatesResponse> {
    return create(ListReportTemplatesResponseSchema, { data: (await this.store.list(ctx.tenantId)).map(toReportTemplate) });
  }

  async getReportTemplate(ctx: TenantContext, req: ReportIdRequest): Promise<ReportTemplate> {
    return toReportTemplate(await this.mustFind(ctx.tenantId, req.id));
  }

  async createReportTemplate(ctx: TenantContext, req: ReportTemplateWrite): Promise<ReportTemplate> {
    const values = await this.validate(ctx, req, null);
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const created = await this.store.insert(t, ctx.tenantId, newId(), values);
      await this.record(t, ctx, "create", null, created);
      return created;
    });
    return toReportTemplate(row);
  }

  async updateReportTemplate(ctx: TenantContext, req: ReportTemplateWrite): Promise<ReportTemplate> {
    const current = await this.mustFind(ctx.tenantId, req.id);
    const values = await this.validate(ctx, req, current);
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      const after = await this.store.update(t, ctx.tenantId, before.id, values);
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toReportTemplate(row);
  }

  async deleteReportTemplate(ctx: TenantContext, req: ReportIdRequest): Promise<Empty> {
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      await this.store.delete(t, ctx.tenantId, before.id);
      await this.record(t, ctx, "delete", before, null);
    });
    return create(EmptySchema);
  }

  /** Spec 4.7: another tenant's template, like a missing one, is 404. */
  async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ReportTemplateRow> {
    const row = isUuid(id) ? await this.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("report template", id);
    return row;
  }

  /**
   * The whole template a write leaves: on update the stored one with the sent fields over it, so a
   * new `dataSources` is checked against the sections it keeps. Every bad field is named (400).
   */
  private async validate(ctx: TenantContext, req: ReportTemplateWrite, current: ReportTemplateRow | null): Promise<ReportTemplateValues> {
    const violations: FieldViolation[] = [];
    const bad = (field: string, message: string) => violations.push({ field, message });
    const missing = (field: string, present: boolean) => {
      if (!current && !present) bad(field, "is required");
      return present;
    };

    let name = current?.name ?? "";
    if (missing("name", req.name !== undefined)) {
      name = req.name!.trim();
      if (!name || name.length > MAX_NAME) bad("name", `must be 1-${MAX_NAME} characters`);
    }
    const description = req.description ?? current?.description ?? "";
    if (description.length > MAX_DESCRIPTION) bad("description", `must be at most ${MAX_DESCRIPTION} characters`);

    let dataSources: TemplateDataSource[] = current?.data_sources ?? [];
    if (missing("dataSources", req.dataSources !== undefined)) {
      const items = toJson(ListValueSchema, req.dataSources!) as JsonValue[];
      dataSources = [];
      if (items.length < 1 || items.length > MAX_DATA_SOURCES) bad("dataSources", `must list 1-${MAX_DATA_SOURCES} data sources`);
      items.forEach((item, i) => {
        const field = `dataSources[${i}]`;
        if (!isObject(item)) return bad(field, "must be an object {sourceKey, params}");
        const source = typeof item.sourceKey === "string" ? this.registry.get(item.sourceKey) : undefined;
        if (!source) return bad(`${field}.sourceKey`, `must be one of ${this.registry.all().map((s) => s.key).join(", ")}`);
        if (item.params !== undefined && item.params !== null && !isObject(item.params)) return bad(`${field}.params`, "must be an object");
        const given = (item.params ?? {}) as JsonObject;
        const checked = validateParams(source, given, `${field}.params`, this.now());
        violations.push(...checked.violations);
        dataSources.push({ sourceKey: source.key, params: given });
      });
    }

    let sections: TemplateSection[] = current?.sections ?? [];
    if (missing("sections", req.sections !== undefined)) {
      const items = toJson(ListValueSchema, req.sections!) as JsonValue[];
      sections = [];
      if (items.length < 1 || items.length > MAX_SECTIONS) bad("sections", `must list 1-${MAX_SECTIONS} sections`);
      items.forEach((item, i) => {
        const field = `sections[${i}]`;
        if (!isObject(item)) return bad(field, "must be an object {id, title, dataSourceIndex}");
        const { id, title, dataSourceIndex } = item;
        if (typeof id !== "string" || !SECTION_ID.test(id)) return bad(`${field}.id`, "must be 1-64 letters, digits, _ or -");
        if (sections.some((s) => s.id === id)) return bad(`${field}.id`, `duplicates section ${id}`);
        if (typeof title !== "string" || !title.trim() || title.length > 200) return bad(`${field}.title`, "must be 1-200 characters");
        if (typeof dataSourceIndex !== "number" || !Number.isInteger(dataSourceIndex)) return bad(`${field}.dataSourceIndex`, "must be an integer");
        sections.push({ id, title: title.trim(), dataSourceIndex });
      });
    }
    // Checked on the merged template: a PATCH of dataSources alone must not orphan a kept section.
    // Against data sources that are themselves refused, an index says nothing worth reporting.
    const sourcesRefused = violations.some((v) => v.field.startsWith("dataSources"));
    if (!sourcesRefused) sections.forEach((s, i) => {
      if (s.dataSourceIndex < 0 || s.dataSourceIndex >= dataSources.length) {
        bad(`sections[${i}].dataSourceIndex`, `must be between 0 and ${dataSources.length - 1} (an index of dataSources)`);
      }
    });

    let formats: ReportFormat[] = current?.formats ?? [];
    if (missing("formats", req.formats !== undefined)) {
      const items = toJson(ListValueSchema, req.formats!) as JsonValue[];
      formats = [];
      if (items.length < 1) bad("formats", `must list at least one of ${REPORT_FORMATS.join(", ")}`);
      items.forEach((item, i) => {
        if (typeof item !== "string" || !REPORT_FORMATS.includes(item as ReportFormat)) bad(`formats[${i}]`, `must be one of ${REPORT_FORMATS.join(", ")}`);
        else if (!formats.includes(item as ReportFormat)) formats.push(item as ReportFormat);
      });
    }

    let narrative = current?.narrative ?? { enabled: false, prompt: "" };
    if (req.narrative !== undefined) {
      const n = req.narrative;
      narrative = { ...narrative };
      for (const key of Object.keys(n)) if (key !== "enabled" && key !== "prompt") bad(`narrative.${key}`, "is not a narrative setting (enabled, prompt)");
      if (n.enabled !== undefined) {
        if (typeof n.enabled !== "boolean") bad("narrative.enabled", "must be a boolean");
        else narrative.enabled = n.enabled;
      }
      if (n.prompt !== undefined) {
        if (typeof n.prompt !== "string" || n.prompt.length > MAX_PROMPT) bad("narrative.prompt", `must be a string of at most ${MAX_PROMPT} characters`);
        else narrative.prompt = n.prompt;
      }
    }

    let destinations = current?.destinations ?? [];
    if (req.filters !== undefined) {
      const f = req.filters;
      for (const key of Object.keys(f)) if (key !== "destinations") bad(`filters.${key}`, "is not a filter (destinations)");
      if (f.destinations !== undefined) {
        if (!Array.isArray(f.destinations)) bad("filters.destinations", "must be a list of notification provider ids");
        else {
          const checked = await validateDestinations(this.providers, ctx.tenantId, f.destinations, "filters.destinations");
          violations.push(...checked.violations);
          destinations = checked.ids;
        }
      }
    }

    if (violations.length) throw invalidFields(violations);
    return { name, description, data_sources: dataSources, sections, formats, narrative, destinations, enabled: req.enabled ?? current?.enabled ?? true };
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: ReportTemplateRow | null, after: ReportTemplateRow | null) {
    const row = (after ?? before)!;
    return this.audit.record(t, ctx, {
      action,
      entityType: "report_template",
      entityId: row.id,
      entityName: row.name,
      before: before ? reportTemplateSnapshot(before) : null,
      after: after ? reportTemplateSnapshot(after) : null,
      entityVersion: null,
    });
  }
}
