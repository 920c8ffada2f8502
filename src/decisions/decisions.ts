import type { ServiceRegistration } from "../platform/service-registration.js";
import { CustomerService as CustomerServiceDesc, WorkspaceService as WorkspaceServiceDesc } from "../../gen/decisioning/v1/configuration_pb.js";
import { DecisionService, DecisionTraceService, OutcomeService, type RecommendRequest } from "../../gen/decisioning/v1/decisions_pb.js";
import type { Sequelize } from "sequelize";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import { InvalidatedCache } from "../platform/invalidated-cache.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { DecisionConfigRows } from "../catalog/catalog-store.js";
import type { ExperimentSplit } from "../core/index.js";
import { AttributionLadder } from "./attribution.js";
import type { Counters } from "./counters.js";
import { CustomerCache, type ClvScoreReader, type LoadedAttributesReader } from "./customer-cache.js";
import { CustomerHistory } from "./customer-history.js";
import { decideBatch, type BatchCustomer } from "./batch-decisions.js";
import { CustomerService } from "./customer-service.js";
import { DecisionStore } from "./decision-store.js";
import { OutcomeWriter } from "./outcome-writer.js";
import { RecommendationWriter } from "./recommendation-writer.js";
import { OutcomeLearning } from "./outcome-learning.js";
import { OutcomeReplay } from "./outcome-replay.js";
import { OutcomeStore } from "./outcome-store.js";
import { RecommendService, type DecisionObserver, type ScoringPool } from "./recommend-service.js";
import { DecisionPreview } from "./decision-preview.js";
import { RespondService } from "./respond-service.js";
import { compileTenant, contentIdsOf, type CompiledTenant } from "./snapshot-compiler.js";
import type { PublishedContentReader } from "../content/published-content.js";
import { TenantSettingsService } from "./tenant-settings-service.js";
import { TraceReader } from "./trace-reader.js";
import { TraceService } from "./trace-service.js";
import { TraceWriter } from "./trace-writer.js";
import { WorkspaceService } from "./workspace-service.js";

/** Bus channel: a tenant's configuration changed. */
export const SNAPSHOT_CHANNEL = "decisioning.snapshot.invalidate";
/** Bus channel: a tenant's workspace was reset; every process forgets all it keeps of the tenant. */
export const WORKSPACE_RESET_CHANNEL = "decisioning.workspace.reset";

export interface DecisionsOptions {
  db: Sequelize;
  bus: Bus;
  logger: Logger;
  counters: Counters;
  audit: AuditLog;
  /** The catalog's read model. */
  decisionConfig: (tenantId: string) => Promise<DecisionConfigRows>;
  seedTenant: (t: Transaction, ctx: TenantContext) => Promise<void>;
  /** What other domains keep of a workspace, deleted with it by a reset (alert rules). */
  otherWorkspaceData?: ReadonlyArray<(t: Transaction, tenantId: string) => Promise<void>>;
  pool: ScoringPool | null;
  minTreeWalksForPool: number;
  decisionQuota: number | null;
  /** The experiments' read model: the tenant's active experiments, oldest first. None when absent. */
  activeExperiments?: (tenantId: string) => Promise<ExperimentSplit[]>;
  /** Counts decisions (metrics). */
  observer?: DecisionObserver;
  /** The content domain's read model: what creatives serve. None when absent. */
  publishedContent?: PublishedContentReader;
  /** The CLV domain's read model, for the CLV tilt (spec 4.14). None: no customer has a record. */
  clvScore?: ClvScoreReader;
  /** Data ingestion's read model: attributes from loaded customer tables. None: no such tables. */
  loadedAttributes?: LoadedAttributesReader;
}

/** Recommend, traces, customers and the workspace: built once at start-up. */
export function createDecisions(o: DecisionsOptions) {
  const store = new DecisionStore(o.db);
  const snapshots = new InvalidatedCache<CompiledTenant>(o.bus, SNAPSHOT_CHANNEL, async (tenantId) => {
    const [rows, settings, experiments] = await Promise.all([
      o.decisionConfig(tenantId),
      store.settings(tenantId),
      o.activeExperiments ? o.activeExperiments(tenantId) : [],
    ]);
    // A second read only for tenants whose creatives name content.
    const contentIds = contentIdsOf(rows);
    const published = o.publishedContent && contentIds.length ? await o.publishedContent(tenantId, contentIds) : [];
    return compileTenant(rows, settings, o.logger, experiments, published);
  });
  const customers = new CustomerCache(o.bus, store, o.clvScore ?? null, o.loadedAttributes ?? null);
  /**
   * The replayable outcomes of the tenant go with its snapshot (outcome-replay.ts). The evidence
   * cache needs no message: the wipe clears this process's, and what other processes keep is
   * evidence of offers the reset deleted, which no decision names again.
   */
  const forgetTenant = (tenantId: string) => {
    snapshots.forgetWhere((key) => key === tenantId);
    customers.forgetTenant(tenantId);
  };
  const traces = new TraceWriter(store, o.logger);
  const recommend = new RecommendService({
    snapshots,
    customers,
    counters: o.counters,
    recommendations: new RecommendationWriter(store),
    traces,
    pool: o.pool,
    minTreeWalksForPool: o.minTreeWalksForPool,
    decisionQuota: o.decisionQuota,
    logger: o.logger,
    observer: o.observer,
  });
  const preview = new DecisionPreview({ snapshots, customers, counters: o.counters, pool: o.pool, minTreeWalksForPool: o.minTreeWalksForPool });
  const outcomes = new OutcomeStore(o.db);
  const replay = new OutcomeReplay(outcomes, o.logger);
  const respond = new RespondService({
    snapshots,
    store: outcomes,
    writer: new OutcomeWriter(outcomes),
    replay,
    attribution: new AttributionLadder(outcomes),
    learning: new OutcomeLearning(o.counters, outcomes),
    logger: o.logger,
  });
  const traceReader = new TraceReader(store, o.logger);
  const history = new CustomerHistory(o.db, store);
  const traceService = new TraceService(store, traceReader);
  const customerService = new CustomerService(store, customers);
  const tenantSettings = new TenantSettingsService(o.db, store, o.audit, snapshots);
  const workspace = new WorkspaceService({
    store,
    counters: o.counters,
    audit: o.audit,
    seedTenant: o.seedTenant,
    otherWorkspaceData: o.otherWorkspaceData ?? [],
    // Confirmed: the reset answers only once every process has forgotten the tenant.
    forgetTenantEverywhere: (tenantId) => o.bus.publish(WORKSPACE_RESET_CHANNEL, tenantId, { confirmed: true }),
    logger: o.logger,
    decisionQuota: o.decisionQuota,
  });
  const services: ServiceRegistration[] = [
    {
      service: DecisionService,
      impl: { recommend: (ctx, req) => recommend.recommend(ctx, req), recommendQuery: (ctx, req) => recommend.recommend(ctx, req) },
    },
    {
      service: OutcomeService,
      impl: {
        respond: (ctx, req, call) => respond.respond(ctx, req, call),
        respondBulk: (ctx, req) => respond.respondBulk(ctx, req),
        capture: (ctx, req, call) => respond.respond(ctx, req, call),
      },
    },
    {
      service: DecisionTraceService,
      impl: { listDecisionTraces: (ctx, req) => traceService.listDecisionTraces(ctx, req), getDecisionTrace: (ctx, req) => traceService.getDecisionTrace(ctx, req) },
    },
    {
      service: CustomerServiceDesc,
      impl: { putCustomer: (ctx, req) => customerService.putCustomer(ctx, req), getCustomer: (ctx, req) => customerService.getCustomer(ctx, req) },
    },
    {
      // The proto's WorkspaceService serves the tenant settings beside usage and reset.
      service: WorkspaceServiceDesc,
      impl: {
        getTenantSettings: (ctx) => tenantSettings.getTenantSettings(ctx),
        updateTenantSettings: (ctx, req) => tenantSettings.updateTenantSettings(ctx, req),
        getWorkspaceUsage: (ctx) => workspace.getWorkspaceUsage(ctx),
        resetWorkspace: (ctx, req) => workspace.resetWorkspace(ctx, req),
      },
    },
  ];
  return {
    services,
    traces,
    /** What other domains read (explanations): traces replayed with their score task, and tenant settings. */
    readModel: {
      replayTrace: (tenantId: string, id: string) => traceReader.replay(tenantId, id),
      tenantSettings: (tenantId: string) => store.settings(tenantId),
      /** Stored attributes, interactions, RFM facts and experiment variants per customer, for CLV and the profile. */
      customerHistory: history,
    },
    /** After another domain changed what Recommend knows of customers (their CLV): drops them in every process. */
    customersChanged: (tenantId: string, customerIds: readonly string[]) => customers.invalidateMany(tenantId, customerIds),
    /** Recommend as a call, for journeys' decision steps: counted against the decision quota like every Recommend. */
    recommend: (ctx: TenantContext, req: RecommendRequest) => recommend.recommend(ctx, req),
    /** A dry-run Recommend: the same decision, nothing reserved, counted or stored (decision-preview.ts). */
    preview: (ctx: TenantContext, req: RecommendRequest) => preview.preview(ctx, req),
    /** After a pipeline loaded a customer table of the tenant: its customers are read again, in every process. */
    customerTablesLoaded: (tenantId: string) => customers.invalidateTenant(tenantId),
    /** Batch decisions for pipeline runs (batch-decisions.ts): one Recommend per customer, scored in the worker pool. */
    decideBatch: (tenantId: string, flow: string, limit: number, customers: readonly BatchCustomer[]) =>
      decideBatch((ctx, req, options) => recommend.recommend(ctx, req, options), tenantId, flow, limit, customers),
    /** Subscribes the caches to cross-process invalidation. */
    listen: () => Promise.all([snapshots.listen(), customers.listen(), replay.listen(o.bus), o.bus.subscribe(WORKSPACE_RESET_CHANNEL, forgetTenant)]),
    /** The keys of the tenant's outcome types in the `positive` category: what experiments count as conversions. */
    positiveOutcomes: async (tenantId: string) =>
      [...(await snapshots.get(tenantId)).outcomeTypes].filter(([, category]) => category === "positive").map(([key]) => key),
    /** What the catalog and the experiments call after every committed configuration change. */
    configChanged: (tenantId: string) => void snapshots.invalidate(tenantId).catch((err) => o.logger.warn({ err, tenantId }, "snapshot invalidation not published")),
    close: () => traces.close(),
  };
}
