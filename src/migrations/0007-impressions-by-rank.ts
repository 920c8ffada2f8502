import type { MigrationFn } from "../platform/migrator.js";

/**
 * The third rung of Respond's attribution ladder (spec 4.4) reads a customer's latest impression
 * row at a rank. Without this index it walks all of the customer's interactions newest first, which
 * for a shared customer id (an anonymous visitor, say) is the whole of a busy tenant's history.
 * Only an index: nothing is rewritten or removed.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE INDEX interactions_customer_rank ON interactions (tenant_id, customer_id, rank, created_at DESC) WHERE rank IS NOT NULL;
  `);
};
