import type { MigrationFn } from "../platform/migrator.js";

/**
 * Ended sessions of the single-node default (no REDIS_URL), which kept them in process memory: a
 * restart forgot every sign-out, and a copy of a signed-out cookie was accepted again until it
 * expired (src/sessions/session-revocations.ts). With Redis the table stays empty.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE session_revocations (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      sid text NOT NULL,
      revoked_until timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, sid)
    );
    CREATE INDEX session_revocations_until ON session_revocations (revoked_until);
  `);
};
