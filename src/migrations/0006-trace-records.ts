import type { MigrationFn } from "../platform/migrator.js";

/**
 * A decision trace is stored as its replay record (the inputs the stages read, what was returned,
 * what a concurrent decision refused) and explained on read by re-running the pure core against the
 * configuration it ran with. That configuration is stored once per version in decision_policies,
 * keyed by the policyVersionHash every trace names (docs/decisioning.md, "Decision traces").
 *
 * Traces written before this migration hold the full explanation in another shape; they are
 * sampled diagnostics of a version that was never released, so they are removed, not converted.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    DELETE FROM decision_traces;
    COMMENT ON COLUMN decision_traces.trace IS 'gzip of the trace record JSON (src/decisions/trace-record.ts)';
    CREATE TABLE decision_policies (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      policy_version_hash text NOT NULL,
      -- gzip of the SnapshotConfig JSON the decisions of this version ran against
      config bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, policy_version_hash)
    );
  `);
};
