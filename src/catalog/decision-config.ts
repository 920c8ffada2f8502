import { randomBytes } from "node:crypto";
import { clone, create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceRegistration } from "../platform/service-registration.js";
import {
  AlgorithmModelSchema,
  AlgorithmModelService,
  AlgorithmModelWriteSchema,
  BudgetSchema,
  BudgetService,
  BudgetWriteSchema,
  DecisionFlowSchema,
  DecisionFlowService,
  DecisionFlowWriteSchema,
  ListAlgorithmModelsResponseSchema,
  ListBudgetsResponseSchema,
  ListDecisionFlowsResponseSchema,
  type BudgetWrite,
} from "../../gen/decisioning/v1/configuration_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import type { FieldViolation } from "../platform/errors.js";
import { CONFIG_VALIDATORS } from "../core/config-validation.js";
import { validateModel } from "../core/scoring/compile-model.js";
import { DEFAULT_MODEL, type ModelConfig } from "../core/scoring/models.js";
import { DEFAULT_FLOW } from "../core/flow.js";
import { FAMILY_STATUSES } from "../core/registry-moves.js";
import type { RegistryStatus } from "../core/scoring/models.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CatalogCollection } from "./catalog-collection.js";
import { toMessage } from "./catalog-mapper.js";
import { BUDGET_RULES, FLOW_RULES, MODEL_RULES } from "./catalog-rules.js";
import type { CatalogRow, CatalogStore, DecisionConfigStore } from "./catalog-store.js";
import { writtenFieldNames, type ColumnValues } from "./write-fields.js";
import { configReferenceViolations, configViolations, referenceViolations } from "./catalog-support.js";
import { DecisionFlowLifecycle, type PublishGate } from "./decision-flows.js";
import { collectionTarget } from "./catalog-collection.js";


/** Model parameters by type, checked by compiling them as the scorer will; paths name `config`. */
export function modelViolations(after: ColumnValues): FieldViolation[] {
  const { id: _id, key: _key, type: _type, registryStatus: _status, ...params } = (after.config ?? {}) as Record<string, unknown>;
  const model = { ...params, id: String(after.key), key: String(after.key), type: after.type } as ModelConfig;
  return configViolations(validateModel(model).map((p) => p.replace(/^model(?=[.:[])/, "config")));
}

/**
 * A model in a family role (shadow, challenger, champion) changes family only through promote,
 * which keeps the one-champion rule and the rollback guard (docs/models.md); registryStatus itself
 * is not a writable field here at all (spec 3.3).
 */
function familyViolations(after: ColumnValues, before: CatalogRow | null): FieldViolation[] {
  const status = before?.registry_status as RegistryStatus | undefined;
  if (!status || !FAMILY_STATUSES.includes(status) || after.family === before!.family) return [];
  return [{ field: "family", message: `changes through POST /api/v1/algorithm-models/{id}/promote while the model is ${status}` }];
}

/** Spec 2.19: at least one limit; a scope other than global names a live entity of that kind. */
async function budgetViolations(store: CatalogStore, ctx: TenantContext, after: ColumnValues): Promise<FieldViolation[]> {
  const violations = budgetShapeViolations(after);
  const scope = (after.scope as string | undefined) ?? "global";
  if (scope !== "global" && after.scope_id) {
    violations.push(...(await referenceViolations(store, ctx.tenantId, [{ field: "scopeId", kind: scope as "offer" | "category" | "channel", id: after.scope_id }])));
  }
  return violations;
}

/** The budget's rules that need no lookup: a limit, and a scope id exactly when the scope is not global. */
export function budgetShapeViolations(after: ColumnValues): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (after.max_impressions == null && after.max_spend == null && after.max_conversions == null) {
    violations.push({ field: "maxImpressions", message: "at least one of maxImpressions, maxSpend and maxConversions is required" });
  }
  const scope = (after.scope as string | undefined) ?? "global";
  if (scope === "global") {
    if (after.scope_id) violations.push({ field: "scopeId", message: "must be null for a global budget" });
  } else if (!after.scope_id) {
    violations.push({ field: "scopeId", message: `is required for scope ${scope}` });
  }
  return violations;
}

/**
 * Spec 2.19 names no `name` for a budget, so a create without one gets `budget-` and 12 random hex
 * digits: unique among the tenant's live budget names like any name (a collision would be a 409).
 * A name that is sent is checked as always.
 */
function withBudgetName(req: BudgetWrite): BudgetWrite {
  if (writtenFieldNames(BudgetWriteSchema, req).has("name")) return req;
  const named = clone(BudgetWriteSchema, req);
  named.name = `budget-${randomBytes(6).toString("hex")}`;
  // REST fills the mask from the body's keys: the generated name must be in it to be written.
  const paths = req.updateMask?.paths ?? [];
  if (paths.length) named.updateMask = create(FieldMaskSchema, { paths: [...paths, "name"] });
  return named;
}

/** Offers a flow lists must be the tenant's; models, offers, categories and profiles its nodes name must exist. */
async function flowViolations(store: CatalogStore, ctx: TenantContext, after: ColumnValues, before: CatalogRow | null): Promise<FieldViolation[]> {
  const violations = configViolations(CONFIG_VALIDATORS.decisionFlow(after.config));
  const offerIds = (after.offer_ids as string[] | undefined) ?? [];
  violations.push(
    ...(await referenceViolations(store, ctx.tenantId, offerIds.map((id, i) => ({ field: `offerIds[${i}]`, kind: "offer" as const, id })))),
  );
  if (violations.length) return violations;
  const nodes = ((after.config as { nodes?: Array<Record<string, unknown>> } | undefined)?.nodes ?? []);
  for (const [i, node] of nodes.entries()) {
    for (const key of [node.modelKey, ...((node.shadowModelKeys as string[] | undefined) ?? [])]) {
      if (typeof key === "string" && key !== DEFAULT_MODEL.key && !(await store.find("algorithm_models", ctx.tenantId, { key }))) {
        violations.push({ field: `config.nodes[${i}]`, message: `unknown model key ${key}` });
      }
    }
  }
  violations.push(...(await configReferenceViolations(store, ctx.tenantId, after.config, before?.config)));
  return violations;
}

/**
 * Auto-assembly when a flow starts serving (spec 3.1): an auto-assembling flow that is created
 * active, or becomes active, lists the tenant's active offers, as offer events would have put them
 * there had it been active all along (decision-flows.ts onOfferEvent keeps it current from then on).
 */
async function assembledOffers(store: CatalogStore, ctx: TenantContext, after: ColumnValues, before: CatalogRow | null, t: Transaction): Promise<ColumnValues> {
  const serving = after.status === "active" && after.auto_assemble !== false;
  const wasServing = before !== null && before.status === "active" && before.auto_assemble !== false;
  if (!serving || wasServing) return {};
  const listed = (after.offer_ids as string[] | undefined) ?? [];
  const active = await store.activeOfferIds(ctx.tenantId, t);
  return { offer_ids: [...listed, ...active.filter((id) => !listed.includes(id))] };
}

/** Budgets, algorithm models and decision flows: collections with rules of their own. */
export function createDecisionConfig(store: CatalogStore, flowStore: DecisionConfigStore, audit: AuditLog, publishGate?: PublishGate) {
  const budgets = new CatalogCollection(store, audit, {
    table: "budgets",
    entityType: "budget",
    label: "budget",
    schema: BudgetSchema,
    writeSchema: BudgetWriteSchema,
    listSchema: ListBudgetsResponseSchema,
    toMessage: (row) => toMessage(BudgetSchema, row),
    rules: BUDGET_RULES,
    references: [],
    filter: {},
    fixed: {},
    validate: (ctx, after) => budgetViolations(store, ctx, after),
  });
  const models = new CatalogCollection(store, audit, {
    table: "algorithm_models",
    entityType: "algorithm_model",
    label: "algorithm model",
    schema: AlgorithmModelSchema,
    writeSchema: AlgorithmModelWriteSchema,
    listSchema: ListAlgorithmModelsResponseSchema,
    toMessage: (row) => toMessage(AlgorithmModelSchema, row),
    rules: MODEL_RULES,
    references: [],
    filter: {},
    fixed: {},
    validate: async (_ctx, after, before) => [...familyViolations(after, before), ...modelViolations(after)],
  });
  const flows = new CatalogCollection(store, audit, {
    table: "decision_flows",
    entityType: "decision_flow",
    label: "decision flow",
    schema: DecisionFlowSchema,
    writeSchema: DecisionFlowWriteSchema,
    listSchema: ListDecisionFlowsResponseSchema,
    toMessage: (row) => toMessage(DecisionFlowSchema, row),
    rules: FLOW_RULES,
    references: [],
    filter: {},
    // A new flow starts with the default flow's nodes: all candidates, adaptive scoring, default rank.
    fixed: { config: { nodes: DEFAULT_FLOW.nodes } },
    validate: (ctx, after, before) => flowViolations(store, ctx, after, before),
    derive: (ctx, after, before, t) => assembledOffers(store, ctx, after, before, t),
  });
  const lifecycle = new DecisionFlowLifecycle(store, flowStore, audit, publishGate);

  const services: ServiceRegistration[] = [
    {
      service: BudgetService,
      impl: {
        listBudgets: (ctx, req) => budgets.list(ctx, req),
        createBudget: (ctx, req) => budgets.create(ctx, withBudgetName(req as BudgetWrite)),
        updateBudget: (ctx, req) => budgets.update(ctx, req),
        deleteBudget: (ctx, req) => budgets.delete(ctx, req),
      },
    },
    {
      service: AlgorithmModelService,
      impl: {
        listAlgorithmModels: (ctx, req) => models.list(ctx, req),
        createAlgorithmModel: (ctx, req) => models.create(ctx, req),
        getAlgorithmModel: (ctx, req) => models.get(ctx, req),
        updateAlgorithmModel: (ctx, req) => models.update(ctx, req),
        deleteAlgorithmModel: (ctx, req) => models.delete(ctx, req),
      },
    },
    {
      service: DecisionFlowService,
      impl: {
        listDecisionFlows: (ctx, req) => flows.list(ctx, req),
        createDecisionFlow: (ctx, req) => flows.create(ctx, req),
        getDecisionFlow: (ctx, req) => flows.get(ctx, req),
        updateDecisionFlow: (ctx, req) => flows.update(ctx, req),
        deleteDecisionFlow: (ctx, req) => flows.delete(ctx, req),
        publishDecisionFlow: (ctx, req) => lifecycle.publish(ctx, req),
        rollbackDecisionFlow: (ctx, req) => lifecycle.rollback(ctx, req),
        listDecisionFlowVersions: (ctx, req) => lifecycle.listVersions(ctx, req),
      },
    },
  ];
  return {
    services,
    onOfferEvent: lifecycle.onOfferEvent,
    targets: { algorithmModel: collectionTarget(models), decisionFlow: collectionTarget(flows) },
  };
}
