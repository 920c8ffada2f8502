import type { MigrationFn } from "../platform/migrator.js";

/**
 * Health alerts (spec 4.20 `system-health`, 6): conditions that monitors raise and clear per tenant.
 * The partial unique index allows one open alert per (tenant, key), so raising is an upsert that
 * two processes cannot turn into two alerts; resolved alerts stay as history beside it.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE health_alerts (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      key text NOT NULL,
      severity text NOT NULL CHECK (severity IN ('info', 'warning', 'error')),
      message text NOT NULL,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
      raised_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz,
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX health_alerts_open_key ON health_alerts (tenant_id, key) WHERE status = 'open';
    CREATE INDEX health_alerts_recent ON health_alerts (tenant_id, status, updated_at DESC);
  `);
};
