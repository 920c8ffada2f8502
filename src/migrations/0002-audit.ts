import type { MigrationFn } from "../platform/migrator.js";

/**
 * The hash-chained audit log (spec 2.6). Each tenant's entries form one chain: `seq` orders it,
 * `prev_hash` links each entry to the one before, and the unique (tenant_id, prev_hash) index makes a
 * fork impossible even if a writer skipped the per-tenant advisory lock (docs/audit.md).
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE SEQUENCE audit_log_seq;
    CREATE TABLE audit_log (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      seq bigint NOT NULL DEFAULT nextval('audit_log_seq'),
      action text NOT NULL,
      entity_type text NOT NULL,
      entity_id text NOT NULL,
      entity_name text,
      before jsonb,
      after jsonb,
      entity_version integer,
      changes jsonb NOT NULL DEFAULT '{}'::jsonb,
      user_id text,
      user_name text NOT NULL,
      request_id text,
      "timestamp" timestamptz NOT NULL,
      integrity_hash text NOT NULL,
      prev_hash text,
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, seq),
      UNIQUE NULLS NOT DISTINCT (tenant_id, prev_hash)
    );
    CREATE INDEX audit_log_entity ON audit_log (tenant_id, entity_type, seq DESC);
    CREATE INDEX audit_log_entity_id ON audit_log (tenant_id, entity_id, seq DESC);
    CREATE INDEX audit_log_time ON audit_log (tenant_id, "timestamp");
  `);
};
