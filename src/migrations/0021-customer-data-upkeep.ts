import type { MigrationFn } from "../platform/migrator.js";

/**
 * Upkeep of the customer data of migration 0015 (docs/events.md).
 *
 * - `customer_events_age`: the retention job deletes a tenant's events older than
 *   EVENT_RETENTION_DAYS in bounded batches; each batch walks this index from the oldest event
 *   instead of scanning the tenant's events.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE INDEX customer_events_age ON customer_events (tenant_id, occurred_at);
  `);
};
