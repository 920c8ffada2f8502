import type { Sequelize } from "sequelize";
import { quoteIdent } from "../core/index.js";
import type { Transaction } from "../platform/db.js";
import { tenantDataSchema } from "./schema-store.js";

/** Children first. */
const TABLES = [
  "ingestion_dead_letters", "ingestion_runs", "ingestion_pipeline_targets", "ingestion_pipeline_ir", "ingestion_pipelines",
  "ingestion_schemas", "ingestion_connectors",
];

/**
 * A workspace reset's share of ingestion, inside the reset's transaction: connectors, schemas,
 * pipelines, their versions, runs and dead letters, and the tenant's data schema with every loaded
 * table and quarantine in it (so no loaded customer attribute outlives the reset).
 */
export async function wipeIngestion(db: Sequelize, t: Transaction, tenantId: string): Promise<void> {
  for (const table of TABLES) await db.query(`DELETE FROM ${table} WHERE tenant_id = $1`, { bind: [tenantId], transaction: t });
  await db.query(`DROP SCHEMA IF EXISTS ${quoteIdent(tenantDataSchema(tenantId))} CASCADE`, { transaction: t });
}
