import type { MigrationFn } from "../platform/migrator.js";

/**
 * What Recommend reads and writes. Decision rules join the catalog entries (a `config` object each,
 * validated by the core); budgets, models and flows have tables of their own. Recommendation,
 * interaction and trace rows are high-volume: they carry no audit snapshots, and the audit chain
 * never references them.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE catalog_entries DROP CONSTRAINT catalog_entries_kind_check;
    ALTER TABLE catalog_entries ADD CONSTRAINT catalog_entries_kind_check CHECK (kind IN (
      'category', 'sub_category', 'channel', 'placement', 'outcome_type', 'qualification_rule',
      'decisioning_gate', 'contact_policy', 'guardrail_rule', 'ranking_profile', 'cross_offer_constraint', 'segment'));
    ALTER TABLE catalog_entries ADD COLUMN status text, ADD COLUMN config jsonb;

    CREATE TABLE budgets (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      scope text NOT NULL DEFAULT 'global' CHECK (scope IN ('global', 'category', 'offer', 'channel')),
      scope_id uuid,
      max_impressions integer,
      max_spend double precision,
      max_conversions integer,
      cost_per_impression double precision NOT NULL DEFAULT 0,
      cost_per_conversion double precision NOT NULL DEFAULT 0,
      period text NOT NULL DEFAULT 'lifetime' CHECK (period IN ('lifetime', 'day', 'week', 'month')),
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX budgets_live_name ON budgets (tenant_id, name) WHERE deleted_at IS NULL;

    CREATE TABLE algorithm_models (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      key text NOT NULL,
      type text NOT NULL CHECK (type IN ('adaptive', 'formula', 'logistic_regression', 'gradient_boosted')),
      family text NOT NULL DEFAULT '',
      registry_status text NOT NULL DEFAULT 'draft',
      description text NOT NULL DEFAULT '',
      config jsonb NOT NULL DEFAULT '{}'::jsonb,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX algorithm_models_live_key ON algorithm_models (tenant_id, key) WHERE deleted_at IS NULL;
    CREATE UNIQUE INDEX algorithm_models_live_name ON algorithm_models (tenant_id, name) WHERE deleted_at IS NULL;

    CREATE TABLE decision_flows (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      key text NOT NULL,
      description text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'archived')),
      config jsonb NOT NULL DEFAULT '{}'::jsonb,
      offer_ids uuid[] NOT NULL DEFAULT '{}',
      auto_assemble boolean NOT NULL DEFAULT true,
      published_version integer,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX decision_flows_live_key ON decision_flows (tenant_id, key) WHERE deleted_at IS NULL;
    CREATE UNIQUE INDEX decision_flows_live_name ON decision_flows (tenant_id, name) WHERE deleted_at IS NULL;

    CREATE TABLE decision_flow_versions (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      flow_id uuid NOT NULL,
      version integer NOT NULL,
      config jsonb NOT NULL,
      offer_ids uuid[] NOT NULL,
      notes text NOT NULL DEFAULT '',
      published_by text,
      published_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, flow_id, version),
      FOREIGN KEY (tenant_id, flow_id) REFERENCES decision_flows (tenant_id, id) ON DELETE CASCADE
    );

    CREATE TABLE customers (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      customer_id text NOT NULL,
      attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, customer_id)
    );

    CREATE TABLE tenant_settings (
      tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
      decision_trace_enabled boolean NOT NULL DEFAULT true,
      decision_trace_sample_rate double precision NOT NULL DEFAULT 1 CHECK (decision_trace_sample_rate BETWEEN 0 AND 1),
      maturity_ramp_days integer NOT NULL DEFAULT 0 CHECK (maturity_ramp_days >= 0),
      maturity_ramp_start_fraction double precision NOT NULL DEFAULT 0.1 CHECK (maturity_ramp_start_fraction BETWEEN 0 AND 1),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE recommendations (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      customer_id text NOT NULL,
      flow_id uuid,
      interaction_id uuid,
      channel_id uuid,
      multi_placement boolean NOT NULL DEFAULT false,
      offers jsonb NOT NULL,
      context jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX recommendations_customer ON recommendations (tenant_id, customer_id, created_at DESC);

    -- Impressions written by Recommend, and (later) the outcomes Respond records.
    CREATE TABLE interactions (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      customer_id text NOT NULL,
      recommendation_id uuid,
      interaction_id uuid,
      rank integer,
      offer_id uuid NOT NULL,
      creative_id uuid,
      channel_id uuid,
      placement_id uuid,
      outcome text NOT NULL,
      direction text NOT NULL DEFAULT 'outbound',
      context_bucket text NOT NULL DEFAULT '',
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX interactions_customer ON interactions (tenant_id, customer_id, created_at DESC);
    CREATE INDEX interactions_recommendation ON interactions (tenant_id, recommendation_id, rank);

    CREATE TABLE decision_traces (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      recommendation_id uuid NOT NULL,
      customer_id text NOT NULL,
      flow_id uuid,
      degraded_scoring boolean NOT NULL DEFAULT false,
      selected_count integer NOT NULL DEFAULT 0,
      rejected_count integer NOT NULL DEFAULT 0,
      -- gzip of the trace's JSON: a 200-offer trace is ~150 KB of JSON and ~15 KB compressed, and
      -- traces are written for every decision by default but read one at a time.
      trace bytea NOT NULL,
      inputs_hash text NOT NULL,
      policy_version_hash text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX decision_traces_recommendation ON decision_traces (tenant_id, recommendation_id);
    CREATE INDEX decision_traces_customer ON decision_traces (tenant_id, customer_id, created_at DESC);
  `);
};
