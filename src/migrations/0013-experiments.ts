import type { MigrationFn } from "../platform/migrator.js";

/**
 * Experiments (spec 2.15, 3.4, 4.12) and the exposures their results count. A recommendation
 * covered by an experiment names it and the variant the customer had, so results are one indexed
 * scan of the experiment's recommendations joined to the outcomes attributed to them; variant
 * assignments themselves live in Redis (30 days), not here.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE experiments (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      key text NOT NULL,
      name text NOT NULL,
      flow_id uuid,
      champion_model_id uuid NOT NULL,
      champion_pct double precision NOT NULL,
      -- [{modelId, key?, trafficPct}] in variant order.
      challengers jsonb NOT NULL DEFAULT '[]'::jsonb,
      holdout_percent double precision NOT NULL DEFAULT 0,
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'archived')),
      auto_promote boolean NOT NULL DEFAULT false,
      promote_threshold double precision NOT NULL,
      promote_after_days integer NOT NULL,
      -- The first activation: promoteAfterDays counts from here.
      started_at timestamptz,
      promoted_model_id uuid,
      promoted_at timestamptz,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX experiments_live_key ON experiments (tenant_id, key) WHERE deleted_at IS NULL;
    CREATE INDEX experiments_auto_promote ON experiments (tenant_id, id) WHERE auto_promote AND status = 'active' AND deleted_at IS NULL;

    ALTER TABLE recommendations ADD COLUMN experiment_id uuid, ADD COLUMN experiment_variant text;
    CREATE INDEX recommendations_experiment ON recommendations (tenant_id, experiment_id, experiment_variant, customer_id)
      WHERE experiment_id IS NOT NULL;
  `);
};
