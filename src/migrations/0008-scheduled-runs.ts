import type { MigrationFn } from "../platform/migrator.js";

/**
 * One row per (job, slot) that the scheduler or a cron route claimed (docs/adr/0005-scheduler.md).
 * The primary key is what makes a slot run once however many processes and routes race for it:
 * a claim is an INSERT ... ON CONFLICT. Scheduled jobs are platform jobs that work across tenants
 * (tenant-specific work happens inside a job's handler), so this table is platform-level and has no
 * tenant_id; with Citus it stays a local table of the coordinator.
 * `lease_until` lets another process take over a slot whose runner died mid-run.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE scheduled_runs (
      job_name text NOT NULL,
      slot timestamptz NOT NULL,
      status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
      attempts integer NOT NULL,
      error text,
      started_at timestamptz NOT NULL,
      finished_at timestamptz,
      lease_until timestamptz NOT NULL,
      PRIMARY KEY (job_name, slot)
    );
  `);
};
