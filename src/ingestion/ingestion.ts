import type { Sequelize } from "sequelize";
import { IngestionService as IngestionServiceDesc } from "../../gen/decisioning/v1/ingestion_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { normalizeFields } from "../core/index.js";
import { forbiddenAddresses } from "../notifications/outbound-guard.js";
import type { HealthAlerts } from "../observability/operational-signals.js";
import type { Logger } from "../platform/logger.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import { ScheduledRunStore } from "../scheduling/scheduled-run-store.js";
import type { Transaction } from "../platform/db.js";
import { ConnectorService } from "./connector-service.js";
import { loadedCustomerRows } from "./customer-attributes.js";
import { wipeIngestion } from "./ingestion-wipe.js";
import { ConnectorStore } from "./connector-store.js";
import { expiredRunsJob } from "./expired-runs-job.js";
import { pipelineScheduleJob } from "./pipeline-schedule-job.js";
import { PipelineRunner, type BatchDecider } from "./pipeline-runner.js";
import { PipelineService } from "./pipeline-service.js";
import { PipelineStore } from "./pipeline-store.js";
import { SchemaService } from "./schema-service.js";
import { SchemaStore } from "./schema-store.js";

export interface IngestionOptions {
  db: Sequelize;
  audit: AuditLog;
  cipher: SettingsCipher;
  healthAlerts: HealthAlerts;
  logger: Logger;
  /** OUTBOUND_ALLOW_PRIVATE: whether connectors may reach loopback and private addresses. */
  allowPrivate: boolean;
  /** INGESTION_STS_ENDPOINT: where iam_role connectors assume their role; null for AWS STS. */
  stsEndpoint: string | null;
  timeoutMs: number;
  /** The decisions' batch entry point, for decide nodes. */
  decider: BatchDecider | null;
  /** A pipeline loaded a customer schema: the customer cache drops the tenant's entries. */
  customersLoaded(tenantId: string): Promise<void>;
  /** The tenant's live decision flows by id and key: what a decide node may name (the catalog's read model). */
  flows(tenantId: string): Promise<ReadonlyArray<{ id: string; key: string }>>;
  /** RUN_LEASE_MS: how long a run's lease holds without renewal (docs/ingestion.md). */
  runLeaseMs: number;
}

/** Data ingestion (docs/ingestion.md), built once at start-up: its routes, its scheduled jobs and its stop. */
export function createIngestion(o: IngestionOptions): {
  services: ServiceRegistration[];
  jobs: ScheduledJob[];
  /** A workspace reset's share: every ingestion row of the tenant and its data tables. */
  wipeTenant(t: Transaction, tenantId: string): Promise<void>;
  /** Import's hook for an imported schema row (already validated by the export registry): its table. */
  importedSchema(t: Transaction, tenantId: string, row: Record<string, unknown>): Promise<void>;
  /** GDPR erasure's share: a customer's rows in the tenant's loaded customer tables. */
  customerRows: ReturnType<typeof loadedCustomerRows>;
  /**
   * A stop's share, before the pools close: aborts the runs in flight, waits at most `graceMs` for
   * them to be recorded as failed, and refuses new ones. Safe to call again.
   */
  stop(graceMs: number): Promise<void>;
} {
  const objectStore = { forbidden: forbiddenAddresses(o.allowPrivate), stsEndpoint: o.stsEndpoint, timeoutMs: o.timeoutMs };
  const connectorStore = new ConnectorStore(o.db);
  const schemaStore = new SchemaStore(o.db);
  const pipelineStore = new PipelineStore(o.db);
  const connectors = new ConnectorService({ db: o.db, store: connectorStore, audit: o.audit, cipher: o.cipher, objectStore });
  const schemas = new SchemaService({ db: o.db, store: schemaStore, audit: o.audit });
  const runner = new PipelineRunner({
    db: o.db,
    store: pipelineStore,
    schemas: (tenantId) => schemaStore.all(tenantId),
    access: async (tenantId, id) => {
      const row = await connectors.find(tenantId, id);
      return row ? connectors.accessOf(row) : null;
    },
    objectStore,
    healthAlerts: o.healthAlerts,
    decider: o.decider,
    customersLoaded: o.customersLoaded,
    leaseMs: o.runLeaseMs,
    logger: o.logger,
  });
  const pipelines = new PipelineService({ db: o.db, store: pipelineStore, schemas: schemaStore, connectors: connectorStore, audit: o.audit, runner, flows: o.flows });
  return {
    services: [
      {
        service: IngestionServiceDesc,
        impl: {
          listConnectors: (ctx, req) => connectors.listConnectors(ctx, req),
          createConnector: (ctx, req) => connectors.createConnector(ctx, req),
          getConnector: (ctx, req) => connectors.getConnector(ctx, req),
          updateConnector: (ctx, req) => connectors.updateConnector(ctx, req),
          deleteConnector: (ctx, req) => connectors.deleteConnector(ctx, req),
          testConnector: (ctx, req) => connectors.testConnector(ctx, req),
          listSchemas: (ctx, req) => schemas.listSchemas(ctx, req),
          createSchema: (ctx, req) => schemas.createSchema(ctx, req),
          getSchema: (ctx, req) => schemas.getSchema(ctx, req),
          deleteSchema: (ctx, req) => schemas.deleteSchema(ctx, req),
          listPipelines: (ctx, req) => pipelines.listPipelines(ctx, req),
          createPipeline: (ctx, req) => pipelines.createPipeline(ctx, req),
          getPipeline: (ctx, req) => pipelines.getPipeline(ctx, req),
          deletePipeline: (ctx, req) => pipelines.deletePipeline(ctx, req),
          getPipelineIr: (ctx, req) => pipelines.getPipelineIr(ctx, req),
          createPipelineIr: (ctx, req) => pipelines.createPipelineIr(ctx, req),
          runPipeline: (ctx, req) => pipelines.runPipeline(ctx, req),
          listPipelineRuns: (ctx, req) => pipelines.listPipelineRuns(ctx, req),
        },
      },
    ],
    wipeTenant: (t, tenantId) => wipeIngestion(o.db, t, tenantId),
    customerRows: loadedCustomerRows(o.db),
    importedSchema: (t, tenantId, row) => schemaStore.createTable(t, tenantId, row.table_name as string, normalizeFields(row.fields as Array<Record<string, unknown>>, [])),
    jobs: [
      pipelineScheduleJob({
        scheduled: () => pipelineStore.scheduledAcrossTenants(),
        find: (tenantId, id) => pipelineStore.find(tenantId, id),
        run: (row, stop) => pipelines.run(row, "schedule", stop),
        runs: new ScheduledRunStore(o.db),
        leaseMs: o.runLeaseMs,
        logger: o.logger,
      }),
      expiredRunsJob({
        claim: (claimMs, legacyAfterMs, limit) => pipelineStore.claimExpiredRunsAcrossTenants(claimMs, legacyAfterMs, limit),
        finish: (run) => runner.finishExpired(run),
        logger: o.logger,
      }),
    ],
    stop: (graceMs) => runner.stop(graceMs),
  };
}
