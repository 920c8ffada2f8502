import type { MigrationFn } from "../platform/migrator.js";

/**
 * Platform settings (spec 2.13), the platform-owner tenant, per-tenant notification providers and the
 * record of every outbound delivery and attempt (spec 4.21, 6).
 *
 * - `tenants.platform_owner`: at most one tenant (a unique index over the constant), set by
 *   `cli tenant create --platform-owner`; PLATFORM_OWNER_TENANT_ID overrides it.
 * - `platform_settings` belongs to the platform, not to a tenant, so it is keyed by category and key.
 *   An encrypted value is AES-256-GCM ciphertext with the id of the key that made it.
 * - `notification_providers` keeps the non-secret config as jsonb and the secret fields as one
 *   encrypted JSON object; `secret_fields` names them, so a read can mask them without decrypting.
 * - `notification_deliveries`: one row per message (dedupe key) and destination. The unique index is
 *   what keeps a destination that accepted a message from being sent it again; `lease_until` keeps
 *   two dispatchers from sending the same row at once.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE tenants ADD COLUMN platform_owner boolean NOT NULL DEFAULT false;
    CREATE UNIQUE INDEX tenants_one_platform_owner ON tenants ((true)) WHERE platform_owner;

    CREATE TABLE platform_settings (
      category text NOT NULL CHECK (category IN ('email', 'sms', 'push')),
      key text NOT NULL,
      value text NOT NULL,
      encrypted boolean NOT NULL DEFAULT false,
      key_id text,
      description text NOT NULL DEFAULT '',
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (category, key),
      CHECK (encrypted = (key_id IS NOT NULL))
    );

    CREATE TABLE notification_providers (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      type text NOT NULL CHECK (type IN ('email', 'webhook', 'sms', 'push')),
      name text NOT NULL,
      config jsonb NOT NULL DEFAULT '{}'::jsonb,
      secret_fields text[] NOT NULL DEFAULT '{}',
      secrets text,
      secrets_key_id text,
      version integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, name),
      CHECK ((secrets IS NULL) = (secrets_key_id IS NULL))
    );

    CREATE TABLE notification_deliveries (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      kind text NOT NULL,
      dedupe_key text NOT NULL,
      destination_key text NOT NULL,
      destination jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'sending', 'accepted', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      provider_message_id text,
      last_error text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, dedupe_key, destination_key)
    );

    CREATE TABLE notification_delivery_attempts (
      tenant_id uuid NOT NULL,
      delivery_id uuid NOT NULL,
      attempt integer NOT NULL,
      status text NOT NULL CHECK (status IN ('accepted', 'failed')),
      provider_message_id text,
      http_status integer,
      error text,
      started_at timestamptz NOT NULL,
      finished_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, delivery_id, attempt),
      FOREIGN KEY (tenant_id, delivery_id) REFERENCES notification_deliveries (tenant_id, id) ON DELETE CASCADE
    );
  `);
};
