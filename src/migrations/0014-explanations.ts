import type { MigrationFn } from "../platform/migrator.js";

/**
 * Decision explanations (spec 4.11, docs/explanations.md): the tenant's opt-in, off by default, and
 * the 7-day narrative cache. A cached narrative belongs to its trace: the foreign key removes it
 * with the trace (a workspace reset deletes traces), so no text about a customer outlives the
 * record it was written from. Expired rows are never served and are pruned per tenant on write.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE tenant_settings ADD COLUMN llm_explanations_enabled boolean NOT NULL DEFAULT false;
    CREATE TABLE decision_narratives (
      tenant_id uuid NOT NULL,
      trace_id uuid NOT NULL,
      mode text NOT NULL,
      -- the writer's model: LLM_MODEL, or the deterministic template version
      writer_model text NOT NULL,
      inputs_hash text NOT NULL,
      narrative text NOT NULL,
      writer jsonb NOT NULL,
      facts jsonb NOT NULL,
      generated_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, trace_id, mode, writer_model, inputs_hash),
      FOREIGN KEY (tenant_id, trace_id) REFERENCES decision_traces (tenant_id, id) ON DELETE CASCADE
    );
    CREATE INDEX decision_narratives_expiry ON decision_narratives (tenant_id, expires_at);
  `);
};
