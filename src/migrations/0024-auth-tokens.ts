import type { MigrationFn } from "../platform/migrator.js";

/**
 * Password sign-in (spec 5.5, docs/sessions.md).
 *
 * - `auth_tokens`: the single-use, expiring tokens mailed for e-mail verification and password
 *   reset. Only a SHA-256 of the token is kept; the mail carries the token itself. A token is found
 *   by its hash before its tenant is known (the link names none), hence the index on the hash alone,
 *   beside a primary key that leads with tenant_id like every other.
 * - `users.last_sign_in_at`: which of a person's memberships (one user row per tenant with the same
 *   e-mail) a sign-in without `tenantId` picks: the one used last.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE auth_tokens (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      user_id uuid NOT NULL,
      purpose text NOT NULL CHECK (purpose IN ('verify_email', 'password_reset')),
      token_hash text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, token_hash),
      FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
    );
    CREATE INDEX auth_tokens_token_hash ON auth_tokens (token_hash);
    ALTER TABLE users ADD COLUMN last_sign_in_at timestamptz;
  `);
};
