import type { MigrationFn } from "../platform/migrator.js";

/**
 * Single sign-on per tenant (spec 2.12, 4.19): at most one configuration per tenant, so the tenant id
 * is the whole key. The OIDC client secret is stored only as settings-cipher ciphertext bound to the
 * tenant (`oidc_client_secret_key_id` names the key that sealed it); it is never read back to clients.
 * SAML fields are stored (2.12 reserves them) but activate nothing.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE sso_configs (
      tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('oidc', 'saml')),
      enabled boolean NOT NULL,
      saml_entity_id text NOT NULL DEFAULT '',
      saml_sso_url text NOT NULL DEFAULT '',
      saml_acs_url text NOT NULL DEFAULT '',
      oidc_issuer text NOT NULL DEFAULT '',
      oidc_client_id text NOT NULL DEFAULT '',
      oidc_client_secret text,
      oidc_client_secret_key_id text,
      oidc_scopes text NOT NULL,
      default_role text NOT NULL CHECK (default_role IN ('admin', 'editor', 'viewer')),
      allowed_domains text[] NOT NULL DEFAULT '{}',
      auto_provision boolean NOT NULL,
      enforce_for_all_users boolean NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((oidc_client_secret IS NULL) = (oidc_client_secret_key_id IS NULL))
    );
  `);
};
