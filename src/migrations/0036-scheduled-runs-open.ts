import type { MigrationFn } from "../platform/migrator.js";

/**
 * The slots that did not succeed, by slot: the scheduled pipelines' minute job looks every minute
 * for the last day's interrupted slots (docs/ingestion.md, "Schedules"), and `scheduled_runs` keeps
 * 30 days of every job's slots, nearly all of them succeeded. Without it, that look was a scan of
 * the whole table each minute.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`CREATE INDEX scheduled_runs_open ON scheduled_runs (slot) WHERE status <> 'succeeded'`);
};
