import { create, type JsonObject } from "@bufbuild/protobuf";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListPipelineRunsResponseSchema,
  ListPipelinesResponseSchema,
  PipelineRunResultSchema,
  type IngestionIdRequest,
  type ListIngestionRequest,
  type ListPipelineRunsRequest,
  type ListPipelineRunsResponse,
  type ListPipelinesResponse,
  type Pipeline,
  type PipelineIrEnvelope,
  type PipelineIrWrite,
  type PipelineRunResult,
  type PipelineWrite,
} from "../../gen/decisioning/v1/ingestion_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { validatePipelineIr, type PipelineIr } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { AppError, conflict, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest, pageSize } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { validateSchedule } from "../scheduling/job-schedule.js";
import type { ConnectorStore } from "./connector-store.js";
import { pipelineSnapshot, toIrEnvelope, toNodeResult, toPipeline, toPipelineRun } from "./ingestion-mapper.js";
import type { PipelineRunner, RunResult } from "./pipeline-runner.js";
import type { PipelineRow, PipelineStore } from "./pipeline-store.js";
import type { SchemaStore } from "./schema-store.js";

const MAX_NAME = 100;
const MAX_DESCRIPTION = 2000;
const MAX_COMMENT = 2000;
const MAX_RUNS = 100;

export interface PipelineDeps {
  db: Sequelize;
  store: PipelineStore;
  schemas: SchemaStore;
  connectors: ConnectorStore;
  audit: AuditLog;
  runner: PipelineRunner;
  /** The tenant's live decision flows by id and key (the catalog's read model): what a decide node may name. */
  flows(tenantId: string): Promise<ReadonlyArray<{ id: string; key: string }>>;
}

/**
 * Pipelines and their IR versions (spec 2.21, 4.20, 9; docs/ingestion.md). An IR is validated
 * against the tenant's schemas and connectors before it is stored; a new version takes the
 * pipeline's row lock, so concurrent posts become consecutive versions and none is lost.
 */
export class PipelineService {
  constructor(private readonly deps: PipelineDeps) {}

  async listPipelines(ctx: TenantContext, req: ListIngestionRequest): Promise<ListPipelinesResponse> {
    const page = cursorPageRequest(req);
    const result = cursorPage(await this.deps.store.page(ctx.tenantId, page), page.limit);
    // Each row's IR comes from the page's own query (PipelineStore.page), so the list shows the same resource as GET.
    return create(ListPipelinesResponseSchema, { data: result.rows.map((r) => toPipeline(r, r.current_ir)), pagination: result.pagination });
  }

  async getPipeline(ctx: TenantContext, req: IngestionIdRequest): Promise<Pipeline> {
    const row = isUuid(req.id) ? await this.deps.store.findWithIr(ctx.tenantId, req.id) : null;
    if (!row) throw notFound("pipeline", req.id);
    return toPipeline(row, row.current_ir);
  }

  async createPipeline(ctx: TenantContext, req: PipelineWrite): Promise<Pipeline> {
    const v: FieldViolation[] = [];
    const name = req.name.trim();
    if (!name || name.length > MAX_NAME) v.push({ field: "name", message: `is required, 1 to ${MAX_NAME} characters` });
    if (req.description.length > MAX_DESCRIPTION) v.push({ field: "description", message: `at most ${MAX_DESCRIPTION} characters` });
    const irVersion = req.irVersion.trim() || "1.0";
    if (irVersion !== "1.0") v.push({ field: "irVersion", message: 'must be "1.0"' });
    for (const [field, id] of [["connectorId", req.connectorId], ["schemaId", req.schemaId]] as const) {
      if (id && !isUuid(id)) v.push({ field, message: "must be an id" });
    }
    const schedule = req.schedule.trim() || null;
    if (v.length) throw invalidFields(v);
    // The pipeline's field is the expression itself, so errors name `schedule`, not `schedule.cron`.
    if (schedule) validateSchedule({ cron: schedule, timezone: "UTC" }, "schedule", { cron: "schedule", timezone: "schedule" });
    const { row, ir } = await this.transaction(ctx.tenantId, async (t) => {
      // A reference to another tenant's connector or schema is a 400 naming the field.
      const refs: FieldViolation[] = [];
      if (req.connectorId && !(await this.deps.connectors.find(ctx.tenantId, req.connectorId, t))) refs.push({ field: "connectorId", message: `unknown connector ${req.connectorId}` });
      if (req.schemaId && !(await this.deps.schemas.find(ctx.tenantId, req.schemaId, t))) refs.push({ field: "schemaId", message: `unknown schema ${req.schemaId}` });
      if (refs.length) throw invalidFields(refs);
      let row = await this.deps.store
        .insert(t, ctx.tenantId, { id: newId(), name, description: req.description, connector_id: req.connectorId || null, schema_id: req.schemaId || null, ir_version: irVersion, schedule })
        .catch((err) => {
          if (isUniqueViolation(err)) throw conflict("PIPELINE_NAME_TAKEN", `name: a pipeline named "${name}" exists`);
          throw err;
        });
      let ir: Record<string, unknown> | null = null;
      if (req.ir) {
        const added = await this.addVersion(t, ctx, row, req.ir as Record<string, unknown>, "initial version", "ir");
        row = added.pipeline;
        ir = added.version.ir;
      }
      await this.record(t, ctx, "create", null, row);
      return { row, ir };
    });
    // Spec 4.20: a new pipeline answers status draft; its first successful run makes it active.
    return toPipeline(row, ir);
  }

  async deletePipeline(ctx: TenantContext, req: IngestionIdRequest): Promise<Empty> {
    const id = await this.transaction(ctx.tenantId, async (t) => {
      const row = await this.mustFind(ctx.tenantId, req.id, t);
      await this.deps.store.remove(t, ctx.tenantId, row.id);
      await this.record(t, ctx, "delete", row, null);
      return row.id;
    });
    await this.deps.runner.clearHealth(ctx.tenantId, id);
    return create(EmptySchema);
  }

  async getPipelineIr(ctx: TenantContext, req: IngestionIdRequest): Promise<PipelineIrEnvelope> {
    const row = await this.mustFind(ctx.tenantId, req.id);
    const version = row.current_version ? await this.deps.store.version(ctx.tenantId, row.id, row.current_version) : null;
    if (!version) throw new AppError({ code: "NOT_FOUND", reason: "IR_NOT_FOUND", message: `pipeline ${row.id} has no IR yet; POST one to /api/v1/pipelines/${row.id}/ir` });
    return toIrEnvelope(row, version);
  }

  async createPipelineIr(ctx: TenantContext, req: PipelineIrWrite): Promise<PipelineIrEnvelope> {
    if (!req.ir) throw invalidFields([{ field: "ir", message: "is required" }]);
    if (req.comment.length > MAX_COMMENT) throw invalidFields([{ field: "comment", message: `at most ${MAX_COMMENT} characters` }]);
    return this.transaction(ctx.tenantId, async (t) => {
      const row = await this.mustFind(ctx.tenantId, req.id, t);
      const { pipeline, version } = await this.addVersion(t, ctx, row, req.ir as Record<string, unknown>, req.comment, "ir");
      await this.record(t, ctx, "update", row, pipeline, { irVersion: version.version, comment: req.comment });
      return toIrEnvelope(pipeline, version);
    });
  }

  async runPipeline(ctx: TenantContext, req: IngestionIdRequest): Promise<PipelineRunResult> {
    const row = await this.mustFind(ctx.tenantId, req.id);
    return this.toRunResult(await this.run(row, "manual"));
  }

  async listPipelineRuns(ctx: TenantContext, req: ListPipelineRunsRequest): Promise<ListPipelineRunsResponse> {
    const row = await this.mustFind(ctx.tenantId, req.id);
    const limit = pageSize(req.limit, MAX_RUNS, 20);
    return create(ListPipelineRunsResponseSchema, { data: (await this.deps.store.runs(ctx.tenantId, row.id, limit)).map(toPipelineRun) });
  }

  /** Runs a pipeline's current IR, revalidated against the schemas as they are now. */
  async run(row: PipelineRow, trigger: "manual" | "schedule", stop?: AbortSignal): Promise<RunResult> {
    const version = row.current_version ? await this.deps.store.version(row.tenant_id, row.id, row.current_version) : null;
    if (!version) throw new AppError({ code: "FAILED_PRECONDITION", reason: "IR_NOT_FOUND", message: `pipeline ${row.id} has no IR to run; POST one to /api/v1/pipelines/${row.id}/ir` });
    const ir = await this.validate(row.tenant_id, row, version.ir, "ir");
    return this.deps.runner.run(row, ir, version.version, trigger, stop);
  }

  /** A tenant's pipeline, for the scheduled job. */
  find(tenantId: string, id: string): Promise<PipelineRow | null> {
    return this.deps.store.find(tenantId, id);
  }

  private toRunResult(r: RunResult): PipelineRunResult {
    return create(PipelineRunResultSchema, {
      runId: r.runId,
      irVersion: r.irVersion,
      ok: r.ok,
      nodeResults: r.nodeResults.map(toNodeResult),
      failedNodeId: r.failedNodeId ?? undefined,
      error: r.error ?? undefined,
    });
  }

  private async validate(tenantId: string, row: PipelineRow, raw: unknown, field: string): Promise<PipelineIr> {
    const [schemas, connectors, flows] = await Promise.all([this.deps.schemas.all(tenantId), this.deps.connectors.names(tenantId), this.deps.flows(tenantId)]);
    const result = validatePipelineIr(raw, { schemas, connectors, flows, defaultConnectorId: row.connector_id });
    if (!result.ir) throw invalidFields(result.violations.map((x) => ({ field: field === "ir" ? x.field : x.field.replace(/^ir/, field), message: x.message })));
    return result.ir;
  }

  private async addVersion(t: Transaction, ctx: TenantContext, row: PipelineRow, raw: Record<string, unknown>, comment: string, field: string) {
    const ir = await this.validate(ctx.tenantId, row, raw, field);
    const targets = [...new Set(ir.nodes.flatMap((n) => (n.kind === "target" ? [n.schemaId] : [])))];
    return this.deps.store.addVersion(t, ctx.tenantId, row, raw as JsonObject as Record<string, unknown>, comment, ctx.userId, targets);
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<PipelineRow> {
    const row = isUuid(id) ? await this.deps.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("pipeline", id);
    return row;
  }

  private transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>): Promise<T> {
    return tenantWriteTransaction(this.deps.db, tenantId, fn);
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: PipelineRow | null, after: PipelineRow | null, changes?: Record<string, unknown>) {
    const subject = (after ?? before)!;
    return this.deps.audit.record(t, ctx, {
      action,
      entityType: "pipeline",
      entityId: subject.id,
      entityName: subject.name,
      // Snapshots leave the IR out, as they always have: its versions are kept in ingestion_pipeline_ir, and the
      // entry names the version (entityVersion), so the hash-chained log does not repeat whole IRs.
      before: before ? pipelineSnapshot(toPipeline(before, null)) : null,
      after: after ? pipelineSnapshot(toPipeline(after, null)) : null,
      entityVersion: after?.current_version ?? null,
      changes,
    });
  }
}
