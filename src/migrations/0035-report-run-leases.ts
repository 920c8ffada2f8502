import type { MigrationFn } from "../platform/migrator.js";

/**
 * A lease on each report run (docs/reports.md, "Runs whose process stopped"), as on ingestion runs
 * (0034): the process running it renews `lease_until`, and a sweep ends as failed a run-now whose
 * lease ran out. Before, a run-now whose process was killed stayed `running` for good. A scheduled
 * run is taken over by its slot instead, and swept only when no take-over came within a day.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE report_runs ADD COLUMN lease_until timestamptz;
    CREATE INDEX report_runs_running ON report_runs (lease_until) WHERE status = 'running';
  `);
};
