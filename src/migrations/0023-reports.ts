import type { MigrationFn } from "../platform/migrator.js";

/**
 * Reports (spec 2.9, 4.7; docs/reports.md): templates, their schedules, runs and the runs' artifacts.
 *
 * A schedule belongs to its template (deleting the template deletes its schedules); a run does not:
 * runs are history and outlive the template and schedule they came from. A scheduled run records
 * the schedule's slot, and the partial unique index on (tenant, schedule, slot) is the backstop of
 * "one run per slot" beside the scheduler's claim. Artifacts are stored beside their run, bounded
 * in size by the domain (REPORT_ARTIFACT_MAX_BYTES in src/reports/report-limits.ts), and read only
 * by the download route, never with the run.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE report_templates (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      data_sources jsonb NOT NULL,
      sections jsonb NOT NULL,
      formats text[] NOT NULL,
      narrative jsonb NOT NULL DEFAULT '{"enabled": false, "prompt": ""}'::jsonb,
      destinations uuid[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX report_templates_newest ON report_templates (tenant_id, created_at DESC, id DESC);

    CREATE TABLE report_schedules (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      template_id uuid NOT NULL,
      name text NOT NULL,
      cron_expression text NOT NULL,
      timezone text NOT NULL,
      destinations uuid[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL DEFAULT true,
      next_run_at timestamptz,
      last_run_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, template_id) REFERENCES report_templates (tenant_id, id) ON DELETE CASCADE
    );
    CREATE INDEX report_schedules_template ON report_schedules (tenant_id, template_id);
    CREATE INDEX report_schedules_due ON report_schedules (next_run_at) WHERE enabled;

    CREATE TABLE report_runs (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      template_id uuid NOT NULL,
      schedule_id uuid,
      slot timestamptz,
      status text NOT NULL CHECK (status IN ('running', 'completed', 'partially_delivered', 'failed')),
      triggered_by text NOT NULL CHECK (triggered_by IN ('manual', 'cron')),
      started_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz,
      duration_ms integer,
      delivery_results jsonb NOT NULL DEFAULT '[]'::jsonb,
      sections_data jsonb NOT NULL DEFAULT '[]'::jsonb,
      narrative_output jsonb,
      time_zone text NOT NULL DEFAULT 'UTC',
      period_from timestamptz,
      period_to timestamptz,
      error text,
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX report_runs_newest ON report_runs (tenant_id, started_at DESC, id DESC);
    CREATE INDEX report_runs_template ON report_runs (tenant_id, template_id, started_at DESC, id DESC);
    CREATE UNIQUE INDEX report_runs_schedule_slot ON report_runs (tenant_id, schedule_id, slot) WHERE schedule_id IS NOT NULL;

    CREATE TABLE report_artifacts (
      tenant_id uuid NOT NULL,
      run_id uuid NOT NULL,
      format text NOT NULL CHECK (format IN ('pdf', 'csv', 'markdown', 'html')),
      mime_type text NOT NULL,
      file_name text NOT NULL,
      bytes integer NOT NULL,
      content bytea NOT NULL,
      PRIMARY KEY (tenant_id, run_id, format),
      FOREIGN KEY (tenant_id, run_id) REFERENCES report_runs (tenant_id, id) ON DELETE CASCADE
    );
  `);
};
