import type { MigrationFn } from "../platform/migrator.js";

/**
 * A deleted tenant takes its ingestion data schema with it. Deleting a `tenants` row cascades to
 * every table that holds the tenant's rows, ingestion's metadata included, but a tenant's loaded
 * tables live in a PostgreSQL schema of their own (`ingest_<tenant id without dashes>`, see
 * 0027-ingestion), which no foreign key reaches: this trigger drops it, with every loaded table and
 * quarantine in it, in the deleting transaction (a rolled-back delete keeps it). A workspace reset
 * drops it through src/ingestion/ingestion-wipe.ts; the service has no route that deletes a tenant,
 * so this covers the operator's `DELETE FROM tenants`.
 *
 * A migration of its own rather than a change to 0027-ingestion, so that databases that already
 * ran that one get it too.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE FUNCTION ingestion_drop_tenant_schema() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- The name the service gives it (tenantDataSchema in src/ingestion/schema-store.ts).
      EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', 'ingest_' || replace(lower(OLD.id::text), '-', ''));
      RETURN OLD;
    END
    $$;
    CREATE TRIGGER tenants_drop_ingestion_schema AFTER DELETE ON tenants
      FOR EACH ROW EXECUTE FUNCTION ingestion_drop_tenant_schema();
  `);
};
