import { create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ListValueSchema, timestampFromDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  ReportArtifactInfoSchema,
  ReportColumnSchema,
  ReportDataSourceInfoSchema,
  ReportDeliveryResultSchema,
  ReportNarrativeSchema,
  ReportScheduleSchema,
  ReportSectionDataSchema,
  ReportTemplateSchema,
  type ReportArtifactInfo,
  type ReportColumn as ReportColumnMessage,
  type ReportDataSourceInfo,
  type ReportDeliveryResult,
  type ReportNarrative as ReportNarrativeMessage,
  type ReportSchedule,
  type ReportSectionData,
  type ReportTemplate,
} from "../../gen/decisioning/v1/reports_pb.js";
import type { DataSource } from "./data-source-registry.js";
import type { ReportColumn, ReportNarrative, ReportSection } from "./report-document.js";
import type { ReportTemplateRow } from "./report-template-store.js";
import type { ReportScheduleRow } from "./report-schedule-store.js";

export function toReportTemplate(row: ReportTemplateRow): ReportTemplate {
  return create(ReportTemplateSchema, {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    description: row.description,
    dataSources: row.data_sources.map((d) => ({ sourceKey: d.sourceKey, params: d.params })),
    sections: row.sections,
    formats: row.formats,
    narrative: row.narrative,
    filters: { destinations: row.destinations },
    enabled: row.enabled,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** Audit snapshots are the template as the API shows it. */
export function reportTemplateSnapshot(row: ReportTemplateRow): Record<string, unknown> {
  return toJson(ReportTemplateSchema, toReportTemplate(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}

export function toReportSchedule(row: ReportScheduleRow): ReportSchedule {
  return create(ReportScheduleSchema, {
    id: row.id,
    tenantId: row.tenant_id,
    templateId: row.template_id,
    name: row.name,
    cronExpression: row.cron_expression,
    timezone: row.timezone,
    destinations: row.destinations,
    enabled: row.enabled,
    nextRunAt: row.next_run_at ? timestampFromDate(row.next_run_at) : undefined,
    lastRunAt: row.last_run_at ? timestampFromDate(row.last_run_at) : undefined,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

export function reportScheduleSnapshot(row: ReportScheduleRow): Record<string, unknown> {
  return toJson(ReportScheduleSchema, toReportSchedule(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}

const toColumn = (c: ReportColumn): ReportColumnMessage => create(ReportColumnSchema, { name: c.name, type: c.type, unit: c.unit });

export function toDataSourceInfo(s: DataSource): ReportDataSourceInfo {
  return create(ReportDataSourceInfoSchema, {
    key: s.key,
    title: s.title,
    description: s.description,
    parameters: s.parameters.map((p) => ({
      name: p.name,
      type: p.type,
      required: p.required ?? false,
      default: fromJson(ValueSchema, p.default ?? null),
      allowedValues: [...(p.allowedValues ?? [])],
      description: p.description,
    })),
    columns: s.columns.map(toColumn),
  });
}

/** A computed section as stored with a run and as answered (sourceKey beside the ReportSection). */
export interface StoredSection extends ReportSection {
  sourceKey: string;
}

export function toSectionData(s: StoredSection): ReportSectionData {
  return create(ReportSectionDataSchema, {
    id: s.id,
    title: s.title,
    sourceKey: s.sourceKey,
    columns: s.columns.map(toColumn),
    rows: s.rows.map((r) => fromJson(ListValueSchema, r as JsonValue[])),
  });
}

export function toNarrativeMessage(n: ReportNarrative): ReportNarrativeMessage {
  return create(ReportNarrativeSchema, n);
}

/** An artifact as stored with a run, and the route that downloads it. */
export interface ArtifactMeta {
  format: string;
  mimeType: string;
  fileName: string;
  bytes: number;
}

export function toArtifactInfo(runId: string, a: ArtifactMeta): ReportArtifactInfo {
  return create(ReportArtifactInfoSchema, { ...a, downloadPath: `/api/v1/reports/runs/${runId}/artifacts/${a.format}` });
}

/** A destination's outcome as stored with a run (spec 2.9 deliveryResults). */
export interface StoredDelivery {
  providerId: string;
  ok: boolean;
  providerMessageId: string | null;
  error: string | null;
}

export function toDeliveryResult(d: StoredDelivery): ReportDeliveryResult {
  return create(ReportDeliveryResultSchema, {
    providerId: d.providerId,
    ok: d.ok,
    providerMessageId: d.providerMessageId ?? undefined,
    error: d.error ?? undefined,
  });
}
