import type { MigrationFn } from "../platform/migrator.js";

/**
 * Upkeep of the customer data of migration 0015 (docs/events.md).
 *
 * - `customer_events_age`: the retention job deletes a tenant's events older than
 *   EVENT_RETENTION_DAYS in bounded batches; each batch walks this index from the oldest event
 *   instead of scanning the tenant's events.
 * - Journeys end: `exit_event_types` take an enrolled customer out (`exited`), `duration_hours`
 *   completes an enrollment that long after it began (`completes_at`; null: never by time).
 *   `ended_at` says when either happened. The partial unique index of 0015 ("one active enrollment
 *   per customer and journey") then admits a new enrollment. `journey_enrollments_due` serves the
 *   completion job, which runs across tenants like the approvals' expiry; `journey_enrollments_customer`
 *   the exit an event makes.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE INDEX customer_events_age ON customer_events (tenant_id, occurred_at);

    ALTER TABLE journeys
      ADD COLUMN exit_event_types text[] NOT NULL DEFAULT '{}',
      ADD COLUMN duration_hours integer CHECK (duration_hours BETWEEN 0 AND 8760);
    ALTER TABLE journey_enrollments
      ADD COLUMN completes_at timestamptz,
      ADD COLUMN ended_at timestamptz,
      ADD COLUMN exit_event_id uuid;
    CREATE INDEX journey_enrollments_due ON journey_enrollments (completes_at) WHERE status = 'active' AND completes_at IS NOT NULL;
    CREATE INDEX journey_enrollments_customer ON journey_enrollments (tenant_id, customer_id) WHERE status = 'active';
  `);
};
