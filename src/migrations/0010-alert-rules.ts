import type { MigrationFn } from "../platform/migrator.js";

/**
 * Alert rules (spec 2.8, 3.6) and what the alert metrics need of the decisions (docs/alerts.md).
 *
 * `last_evaluated_at` is the last scheduler slot the evaluator finished for a rule: a slot that
 * runs again (a retry, or the cron route beside the scheduler) skips it, so a rule's status and
 * `last_fired_at` move once per slot.
 *
 * Recommend records each decision's funnel figures on its recommendation row, in the insert it
 * already makes: how many candidates passed eligibility, how many of them contact policy dropped
 * (suppression), and whether scoring degraded. Rows stored before this migration have NULLs and
 * are left out of the rates. The metrics read recent windows of recommendations and interactions:
 * BRIN indexes on created_at find recent rows of an append-mostly table for a fraction of a btree's
 * cost on the hot path's inserts.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE alert_rules (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      metric text NOT NULL,
      operator text NOT NULL CHECK (operator IN ('gt', 'lt', 'gte', 'lte', 'eq')),
      threshold double precision NOT NULL,
      window_minutes double precision NOT NULL DEFAULT 5,
      channels jsonb NOT NULL,
      cooldown_minutes double precision NOT NULL DEFAULT 60,
      enabled boolean NOT NULL DEFAULT true,
      status text NOT NULL CHECK (status IN ('ok', 'fired', 'cooldown', 'delivery_failed', 'unsupported_metric')),
      last_fired_at timestamptz,
      last_evaluated_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX alert_rules_enabled ON alert_rules (tenant_id) WHERE enabled;

    ALTER TABLE recommendations
      ADD COLUMN qualified_count integer,
      ADD COLUMN suppressed_count integer,
      ADD COLUMN degraded_scoring boolean;
    CREATE INDEX recommendations_created_brin ON recommendations USING brin (created_at);
    CREATE INDEX interactions_created_brin ON interactions USING brin (created_at);
  `);
};
