import { isDeepStrictEqual } from "node:util";
import { create } from "@bufbuild/protobuf";
import { DeleteResponseSchema, type DeleteResponse } from "../../gen/decisioning/v1/catalog_pb.js";
import {
  ListExperimentsResponseSchema,
  type Experiment,
  type ExperimentIdRequest,
  type ExperimentResults,
  type ExperimentWrite,
  type GetExperimentResultsRequest,
  type ListExperimentsRequest,
  type ListExperimentsResponse,
} from "../../gen/decisioning/v1/experiments_pb.js";
import { analyzeExperiment, DEFAULT_RESULTS_PARAMETERS, type ResultsParameters, type VariantCounts } from "../core/index.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { conflict, invalidField, invalidFields, isAppError, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import { experimentSnapshot, toExperiment, toResults, toSplit } from "./experiment-mapper.js";
import {
  DEFAULTS,
  generatedKey,
  recordViolations,
  transitionViolation,
  withActivation,
  writtenValues,
  type ExperimentFields,
} from "./experiment-rules.js";
import { EXPERIMENT_STATUSES, type ExperimentRow, type ExperimentStatus, type ExperimentStore, type ExperimentValues } from "./experiment-store.js";

/** What the experiments read of other domains, as narrow functions (the catalog's and the decisions' read models). */
export interface ExperimentReferences {
  /** Which of `ids` are live models / decision flows of the tenant. */
  liveIds(tenantId: string, table: "algorithm_models" | "decision_flows", ids: readonly string[]): Promise<Set<string>>;
  /** The outcome keys in the `positive` category: conversions. */
  positiveOutcomes(tenantId: string): Promise<string[]>;
}

export interface ExperimentServiceDeps {
  store: ExperimentStore;
  audit: AuditLog;
  references: ExperimentReferences;
  /** After every committed write: Recommend's snapshot (which holds the active experiments) is stale. */
  changed: (tenantId: string) => void;
  now?: () => Date;
}

/**
 * Experiments' routes (spec 4.12): create, list, read, update (status moves, champion, split),
 * delete, and results. Every write takes the tenant's write lock, writes its audit row in the same
 * transaction and then invalidates Recommend's snapshot on every process.
 */
export class ExperimentService {
  constructor(private readonly deps: ExperimentServiceDeps) {}

  async listExperiments(ctx: TenantContext, req: ListExperimentsRequest): Promise<ListExperimentsResponse> {
    const page = cursorPageRequest(req);
    if (req.status && !(EXPERIMENT_STATUSES as readonly string[]).includes(req.status)) {
      throw invalidField("status", `must be one of ${EXPERIMENT_STATUSES.join(", ")}`);
    }
    const rows = await this.deps.store.page(ctx.tenantId, page, (req.status || null) as ExperimentStatus | null);
    const result = cursorPage(rows, page.limit);
    return create(ListExperimentsResponseSchema, { data: result.rows.map(toExperiment), pagination: result.pagination });
  }

  async getExperiment(ctx: TenantContext, req: ExperimentIdRequest): Promise<Experiment> {
    return toExperiment(await this.mustFind(ctx.tenantId, req.id));
  }

  async createExperiment(ctx: TenantContext, req: ExperimentWrite): Promise<Experiment> {
    const violations: FieldViolation[] = [];
    const written = writtenValues(req, violations);
    const fields: Partial<ExperimentFields> = { ...DEFAULTS, challengers: [], key: generatedKey(), ...written };
    // The spec's fields (2.15) name no `name`: without one the experiment is called by its key.
    fields.name ??= fields.key;
    await this.validate(ctx.tenantId, fields, true, violations);
    const now = this.now();
    const values = withActivation(fields as ExperimentValues, null, now);
    const row = await this.write(ctx, async (t) => {
      const created = await this.unique(this.deps.store.insert(t, ctx.tenantId, { id: newId(), ...values }), fields.key!);
      await this.record(t, ctx, "create", null, created);
      return created;
    });
    return toExperiment(row);
  }

  /**
   * The fields sent change; the rest stay. The key is fixed once created (it seeds every
   * assignment), status moves follow LEGAL_MOVES, and an archived experiment no longer changes.
   */
  async updateExperiment(ctx: TenantContext, req: ExperimentWrite): Promise<Experiment> {
    const violations: FieldViolation[] = [];
    const written = writtenValues(req, violations);
    const row = await this.write(ctx, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (before.status === "archived") {
        // A retried or repeated PUT that changes nothing answers as for any other state; a change is refused.
        const current = fieldsOf(before) as unknown as Record<string, unknown>;
        const changed = Object.keys(written).find((k) => !isDeepStrictEqual(written[k as keyof typeof written], current[k]));
        if (!violations.length && changed === undefined) return before;
        throw invalidField(changed ?? "status", "cannot change: the experiment is archived");
      }
      if (written.key !== undefined && written.key !== before.key) violations.push({ field: "key", message: "cannot change: it seeds the variant assignment" });
      const statusValid = written.status !== undefined && !violations.some((v) => v.field === "status");
      const move = statusValid ? transitionViolation(before.status, written.status!) : null;
      if (move) violations.push(move);
      const after = { ...fieldsOf(before), ...written };
      await this.validate(ctx.tenantId, after, false, violations);
      const updated = await this.deps.store.update(t, ctx.tenantId, before.id, withActivation(written as ExperimentValues, before, this.now()));
      await this.record(t, ctx, "update", before, updated);
      return updated;
    });
    return toExperiment(row);
  }

  /** A soft delete, from any state: the experiment stops covering decisions at once; its exposures stay. */
  async deleteExperiment(ctx: TenantContext, req: ExperimentIdRequest): Promise<DeleteResponse> {
    await this.write(ctx, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      const after = await this.deps.store.update(t, ctx.tenantId, before.id, { deleted_at: this.now() });
      await this.record(t, ctx, "soft_delete", before, after);
    });
    return create(DeleteResponseSchema, { success: true, id: req.id, cascaded: 0 });
  }

  async getExperimentResults(ctx: TenantContext, req: GetExperimentResultsRequest): Promise<ExperimentResults> {
    const parameters = resultsParameters(req);
    const row = await this.mustFind(ctx.tenantId, req.id);
    return toResults(analyzeExperiment(toSplit(row), await this.variantCounts(ctx.tenantId, row), parameters));
  }

  /** Samples and conversions by variant name (auto-promotion reads them too). */
  async variantCounts(tenantId: string, row: ExperimentRow): Promise<Map<string, VariantCounts>> {
    const rows = await this.deps.store.variantCounts(tenantId, row.id, await this.deps.references.positiveOutcomes(tenantId));
    return new Map(rows.map((r) => [r.variant, { samples: r.samples, conversions: r.conversions }]));
  }

  /** One write transaction, then the invalidation every process hears (only once it committed). */
  async write<T>(ctx: TenantContext, fn: (t: Transaction) => Promise<T>): Promise<T> {
    const result = await this.deps.store.transaction(ctx.tenantId, fn);
    this.deps.changed(ctx.tenantId);
    return result;
  }

  record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "soft_delete", before: ExperimentRow | null, after: ExperimentRow) {
    return this.deps.audit.record(t, ctx, {
      action,
      entityType: "experiment",
      entityId: after.id,
      entityName: after.name,
      before: before ? experimentSnapshot(before) : null,
      after: experimentSnapshot(after),
      entityVersion: after.version,
    });
  }

  async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ExperimentRow> {
    const row = isUuid(id) ? await this.deps.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("experiment", id);
    return row;
  }

  /** Field, cross-field and reference rules together: one 400 naming every problem, before anything is written. */
  private async validate(tenantId: string, after: Partial<ExperimentFields>, creating: boolean, violations: FieldViolation[]): Promise<void> {
    if (!violations.length) violations.push(...recordViolations(after, creating));
    if (!violations.length) violations.push(...(await this.referenceViolations(tenantId, after)));
    if (violations.length) throw invalidFields(violations);
  }

  /** Models and the flow must be live in the caller's tenant: a foreign or unknown id is a 400 naming its field (spec 7). */
  private async referenceViolations(tenantId: string, after: Partial<ExperimentFields>): Promise<FieldViolation[]> {
    const refs = [
      { field: "championModelId", id: after.champion_model_id! },
      ...(after.challengers ?? []).map((c, i) => ({ field: `challengers[${i}].modelId`, id: c.modelId })),
    ];
    const [models, flows] = await Promise.all([
      this.deps.references.liveIds(tenantId, "algorithm_models", refs.map((r) => r.id)),
      after.flow_id ? this.deps.references.liveIds(tenantId, "decision_flows", [after.flow_id]) : new Set<string>(),
    ]);
    const violations = refs.filter((r) => !models.has(r.id)).map((r) => ({ field: r.field, message: `unknown model ${r.id}` }));
    if (after.flow_id && !flows.has(after.flow_id)) violations.push({ field: "flowId", message: `unknown decision flow ${after.flow_id}` });
    return violations;
  }

  /** The live key index refused the write: 409 naming the key. */
  private async unique(work: Promise<ExperimentRow>, key: string): Promise<ExperimentRow> {
    try {
      return await work;
    } catch (err) {
      if (!isAppError(err) && isUniqueViolation(err)) throw conflict("DUPLICATE_KEY", `key: an experiment with key "${key}" already exists`);
      throw err;
    }
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}

function fieldsOf(row: ExperimentRow): ExperimentFields {
  return {
    key: row.key,
    name: row.name,
    flow_id: row.flow_id,
    champion_model_id: row.champion_model_id,
    champion_pct: row.champion_pct,
    challengers: row.challengers,
    holdout_percent: row.holdout_percent,
    status: row.status,
    auto_promote: row.auto_promote,
    promote_threshold: row.promote_threshold,
    promote_after_days: row.promote_after_days,
  };
}

/** The query's parameters, defaulted; alpha defaults to 1 − confidenceLevel. 400 naming the parameter. */
function resultsParameters(req: GetExperimentResultsRequest): ResultsParameters {
  const violations: FieldViolation[] = [];
  const within = (field: string, value: number | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    if (!(value > 0 && value < 1)) violations.push({ field, message: "must be strictly between 0 and 1" });
    return value;
  };
  const confidenceLevel = within("confidenceLevel", req.confidenceLevel, DEFAULT_RESULTS_PARAMETERS.confidenceLevel);
  // 1 − 0.95 is 0.050000000000000044 in binary; the default alpha is shown as the 0.05 it means.
  const impliedAlpha = req.confidenceLevel === undefined ? DEFAULT_RESULTS_PARAMETERS.alpha : Number((1 - confidenceLevel).toPrecision(12));
  const parameters: ResultsParameters = {
    confidenceLevel,
    alpha: within("alpha", req.alpha, impliedAlpha),
    power: within("power", req.power, DEFAULT_RESULTS_PARAMETERS.power),
    minimumDetectableEffect: DEFAULT_RESULTS_PARAMETERS.minimumDetectableEffect,
  };
  if (req.mde !== undefined) {
    if (!(Number.isFinite(req.mde) && req.mde > 0 && req.mde <= 10)) violations.push({ field: "mde", message: "must be a relative effect above 0 and at most 10 (0.1 = 10%)" });
    parameters.minimumDetectableEffect = req.mde;
  }
  if (violations.length) throw invalidFields(violations);
  return parameters;
}
