import type { MigrationFn } from "../platform/migrator.js";

/**
 * Respond's outcomes share the interactions table with Recommend's impressions. The partial unique
 * index on (tenant_id, idempotency_key) is what makes an outcome exactly-once: a duplicate, even
 * one arriving concurrently on another process, finds the first row instead of adding a second.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE interactions
      ADD COLUMN idempotency_key text,
      ADD COLUMN status text,
      ADD COLUMN payload_hash text,
      ADD COLUMN context jsonb NOT NULL DEFAULT '{}'::jsonb,
      ADD COLUMN outcome_details jsonb NOT NULL DEFAULT '{}'::jsonb,
      ADD COLUMN conversion_value double precision,
      ADD COLUMN response_time double precision,
      ADD COLUMN occurred_at timestamptz;
    CREATE UNIQUE INDEX interactions_idempotency ON interactions (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX interactions_customer_offer ON interactions (tenant_id, customer_id, offer_id, created_at DESC);
    CREATE INDEX recommendations_interaction ON recommendations (tenant_id, interaction_id) WHERE interaction_id IS NOT NULL;
  `);
};
