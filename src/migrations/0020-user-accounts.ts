import type { MigrationFn } from "../platform/migrator.js";

/**
 * People who sign in themselves (spec 5.5), arrive through an identity provider (2.12) or are
 * provisioned by a directory (SCIM, 5.1). One migration for the columns all three share, so that
 * sessions, SSO and SCIM agree on what a verified, password-bearing or directory-managed user is.
 *
 * - `password_hash`: a memory-hard hash in PHC string form; null for users who never set one.
 * - `email_verified_at`: null until the address is proven (mail link, identity provider, directory).
 * - `external_id`: the directory's id of the user (SCIM `externalId`), unique per tenant when set.
 * - `deleted_at`: SCIM DELETE removes access but keeps the row, so audit entries still name the user.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE users
      ADD COLUMN password_hash text,
      ADD COLUMN email_verified_at timestamptz,
      ADD COLUMN external_id text,
      ADD COLUMN deleted_at timestamptz;
    CREATE UNIQUE INDEX users_external_id ON users (tenant_id, external_id) WHERE external_id IS NOT NULL;
    CREATE INDEX users_email_lower ON users (lower(email));
  `);
};
