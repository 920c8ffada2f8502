import type { MigrationFn } from "../platform/migrator.js";

/**
 * Where the single-node default (no REDIS_URL) keeps its in-memory decisioning counters across a
 * restart (src/decisions/counter-persistence.ts, docs/adr/0008-memory-counters-survive-restarts.md):
 * one row per tenant and store (reservations, evidence, buckets, negatives, decisions,
 * assignments), holding that store's state for the tenant as its own small JSON form, expiry times
 * in epoch milliseconds. In PostgreSQL rather than a file beside the data, because the memory mode
 * also runs with DATABASE_URL and no REDIS_URL, where a file would belong to one machine.
 *
 * `json`, not `jsonb`: the rows are written whole and read whole at start-up, never queried inside,
 * so PostgreSQL keeps the text as given. With Redis the table stays empty.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE counter_snapshots (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      store text NOT NULL,
      state json NOT NULL,
      saved_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, store)
    );
  `);
};
