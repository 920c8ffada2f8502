import type { MigrationFn } from "../platform/migrator.js";

/**
 * A decision trace is stored as its replay record (the inputs the stages read, what was returned,
 * what a concurrent decision refused) and explained on read by re-running the pure core against the
 * configuration it ran with. That configuration is stored once per version in decision_policies,
 * keyed by the policyVersionHash every trace names (docs/decisioning.md, "Decision traces").
 *
 * Traces written before this migration hold the full explanation in the shape of spec 2.16 and
 * name no stored configuration. They are kept as they are and read as they were written
 * (src/decisions/stored-explanation.ts): a migration never destroys user data. (This migration
 * first shipped deleting them; a database it ran on then holds replay records only, which is what
 * the edited migration leaves too, so the schema is the same either way.)
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    COMMENT ON COLUMN decision_traces.trace IS 'gzip of the trace record JSON (src/decisions/trace-record.ts), or of the explanation itself before 0006 (src/decisions/stored-explanation.ts)';
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
