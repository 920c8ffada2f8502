import type { MigrationFn } from "../platform/migrator.js";

/**
 * Data ingestion (spec 2.21, 4.20; docs/ingestion.md): connectors, schemas, pipelines with their IR
 * versions, runs and dead letters.
 *
 * The tables a schema describes are not here: each is created by the service, as `ds_<name>`, in the
 * tenant's own PostgreSQL schema (`ingest_<tenant id without dashes>`), so that two tenants can both
 * have `ds_customers` and a pipeline can only ever name tables of its own tenant.
 *
 * `pipeline_ir_versions` keys versions by (tenant, pipeline, version): two concurrent posts that
 * picked the same next version cannot both commit; the service takes the pipeline row lock first, so
 * both commit, one after the other, as two versions.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE ingestion_connectors (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      type text NOT NULL,
      description text NOT NULL DEFAULT '',
      config jsonb NOT NULL,
      auth_method text NOT NULL,
      auth_config jsonb NOT NULL DEFAULT '{}',
      secrets text,
      secrets_key_id text,
      status text NOT NULL CHECK (status IN ('active', 'error')),
      last_error text,
      last_tested_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, name)
    );

    CREATE TABLE ingestion_schemas (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      display_name text NOT NULL,
      entity_type text NOT NULL CHECK (entity_type IN ('customer', 'account', 'custom')),
      table_name text NOT NULL,
      fields jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, name),
      UNIQUE (tenant_id, table_name)
    );

    CREATE TABLE ingestion_pipelines (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      connector_id uuid,
      schema_id uuid,
      ir_version text NOT NULL DEFAULT '1.0',
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active')),
      current_version integer NOT NULL DEFAULT 0,
      schedule text,
      -- High-water marks of incremental_watermark targets: {"<node id>": "<value>"}.
      watermarks jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, name),
      FOREIGN KEY (tenant_id, connector_id) REFERENCES ingestion_connectors (tenant_id, id),
      FOREIGN KEY (tenant_id, schema_id) REFERENCES ingestion_schemas (tenant_id, id)
    );
    CREATE INDEX ingestion_pipelines_scheduled ON ingestion_pipelines (tenant_id, id) WHERE schedule IS NOT NULL;

    CREATE TABLE ingestion_pipeline_ir (
      tenant_id uuid NOT NULL,
      pipeline_id uuid NOT NULL,
      version integer NOT NULL,
      ir jsonb NOT NULL,
      comment text NOT NULL DEFAULT '',
      created_by uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, pipeline_id, version),
      FOREIGN KEY (tenant_id, pipeline_id) REFERENCES ingestion_pipelines (tenant_id, id) ON DELETE CASCADE
    );

    -- Which schemas the current IR of each pipeline targets: DELETE of a schema checks it.
    CREATE TABLE ingestion_pipeline_targets (
      tenant_id uuid NOT NULL,
      pipeline_id uuid NOT NULL,
      schema_id uuid NOT NULL,
      PRIMARY KEY (tenant_id, pipeline_id, schema_id),
      FOREIGN KEY (tenant_id, pipeline_id) REFERENCES ingestion_pipelines (tenant_id, id) ON DELETE CASCADE,
      FOREIGN KEY (tenant_id, schema_id) REFERENCES ingestion_schemas (tenant_id, id)
    );

    CREATE TABLE ingestion_runs (
      tenant_id uuid NOT NULL,
      id uuid NOT NULL,
      pipeline_id uuid NOT NULL,
      ir_version integer NOT NULL,
      trigger text NOT NULL,
      ok boolean,
      node_results jsonb NOT NULL DEFAULT '[]',
      failed_node_id text,
      error text,
      attempts integer NOT NULL DEFAULT 1,
      dead_lettered boolean NOT NULL DEFAULT false,
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, pipeline_id) REFERENCES ingestion_pipelines (tenant_id, id) ON DELETE CASCADE
    );
    CREATE INDEX ingestion_runs_pipeline ON ingestion_runs (tenant_id, pipeline_id, started_at DESC);

    -- errorHandling.dlq: one record per run that failed after its last attempt.
    CREATE TABLE ingestion_dead_letters (
      tenant_id uuid NOT NULL,
      run_id uuid NOT NULL,
      pipeline_id uuid NOT NULL,
      failed_node_id text,
      error text NOT NULL,
      attempts integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, run_id),
      FOREIGN KEY (tenant_id, run_id) REFERENCES ingestion_runs (tenant_id, id) ON DELETE CASCADE
    );
  `);
};
