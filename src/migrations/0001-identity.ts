import type { MigrationFn } from "../platform/migrator.js";

/** Tenants, users, API keys and OAuth clients. Every key and unique index leads with tenant_id (Citus-ready). */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE tenants (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      rate_limits jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE users (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      email text NOT NULL,
      name text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
      token_version integer NOT NULL DEFAULT 1,
      disabled boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, email)
    );

    CREATE TABLE api_keys (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      user_id uuid NOT NULL,
      name text NOT NULL,
      prefix text NOT NULL,
      key_hash text NOT NULL,
      scopes text[] NOT NULL DEFAULT '{}',
      expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz,
      revoke_reason text,
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, key_hash),
      FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
    );
    -- Authentication finds a key before it knows the tenant.
    CREATE INDEX api_keys_key_hash ON api_keys (key_hash);

    CREATE TABLE oauth_clients (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      client_id text NOT NULL,
      secret_hash text NOT NULL,
      scopes text[] NOT NULL,
      created_by uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz,
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, client_id)
    );
    CREATE INDEX oauth_clients_client_id ON oauth_clients (client_id);
  `);
};
