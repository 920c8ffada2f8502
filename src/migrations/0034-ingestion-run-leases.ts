import type { MigrationFn } from "../platform/migrator.js";

/**
 * A lease on each ingestion run (docs/ingestion.md, "Runs whose process stopped"): the process
 * running it renews `lease_until`, and a sweep finishes a run whose lease ran out as failed. Before
 * this, a run whose process was killed mid-run stayed without `finished_at` for good.
 *
 * Rows from before the migration keep a NULL lease; the sweep takes an unfinished one of those once
 * it started long ago (src/ingestion/expired-runs-job.ts, LEGACY_RUN_MS). The partial index holds only
 * unfinished runs, so the sweep's scan across tenants stays as small as the runs in flight.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE ingestion_runs ADD COLUMN lease_until timestamptz;
    CREATE INDEX ingestion_runs_unfinished ON ingestion_runs (lease_until) WHERE finished_at IS NULL;
  `);
};
