import type { MigrationFn } from "../platform/migrator.js";

/**
 * What a customer's directory (SCIM, spec 5.1) says of a user beyond 0020's columns:
 *
 * - `user_name`: the SCIM `userName`, the directory's sign-in name (Entra sends the UPN, which need
 *   not be the mail address). Unique per tenant regardless of case (RFC 7643 `caseExact: false`);
 *   null for users the directory never named, whose `userName` reads as their e-mail.
 * - `given_name`, `family_name`: the parts of SCIM `name`, kept so that a PATCH of one part does not
 *   lose the other; `users.name` stays the display name everything else shows.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE users
      ADD COLUMN user_name text,
      ADD COLUMN given_name text,
      ADD COLUMN family_name text;
    CREATE UNIQUE INDEX users_user_name ON users (tenant_id, lower(user_name)) WHERE user_name IS NOT NULL;
  `);
};
