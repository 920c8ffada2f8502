import type { Sequelize } from "sequelize";
import type { RoleName } from "../platform/context.js";
import { selectRows, type Transaction } from "../platform/db.js";

export type SsoProvider = "oidc" | "saml";

export interface SsoConfigRow {
  tenant_id: string;
  provider: SsoProvider;
  enabled: boolean;
  saml_entity_id: string;
  saml_sso_url: string;
  saml_acs_url: string;
  oidc_issuer: string;
  oidc_client_id: string;
  /** Settings-cipher ciphertext bound to the tenant (sso-secret.ts), or null when none is stored. */
  oidc_client_secret: string | null;
  oidc_client_secret_key_id: string | null;
  oidc_scopes: string;
  default_role: RoleName;
  allowed_domains: string[];
  auto_provision: boolean;
  enforce_for_all_users: boolean;
  created_at: Date;
  updated_at: Date;
}

export type SsoConfigWrite = Omit<SsoConfigRow, "created_at" | "updated_at">;

/** One SSO configuration per tenant (spec 2.12). */
export class SsoConfigStore {
  constructor(private readonly db: Sequelize) {}

  async get(tenantId: string, t?: Transaction, forUpdate = false): Promise<SsoConfigRow | null> {
    const [row] = await selectRows<SsoConfigRow>(
      this.db,
      `SELECT * FROM sso_configs WHERE tenant_id = $1${forUpdate ? " FOR UPDATE" : ""}`,
      [tenantId],
      t,
    );
    return row ?? null;
  }

  async upsert(t: Transaction, row: SsoConfigWrite): Promise<void> {
    await this.db.query(
      `INSERT INTO sso_configs (tenant_id, provider, enabled, saml_entity_id, saml_sso_url, saml_acs_url, oidc_issuer, oidc_client_id,
         oidc_client_secret, oidc_client_secret_key_id, oidc_scopes, default_role, allowed_domains, auto_provision, enforce_for_all_users)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
       ON CONFLICT (tenant_id) DO UPDATE SET provider = EXCLUDED.provider, enabled = EXCLUDED.enabled,
         saml_entity_id = EXCLUDED.saml_entity_id, saml_sso_url = EXCLUDED.saml_sso_url, saml_acs_url = EXCLUDED.saml_acs_url,
         oidc_issuer = EXCLUDED.oidc_issuer, oidc_client_id = EXCLUDED.oidc_client_id, oidc_client_secret = EXCLUDED.oidc_client_secret,
         oidc_client_secret_key_id = EXCLUDED.oidc_client_secret_key_id, oidc_scopes = EXCLUDED.oidc_scopes,
         default_role = EXCLUDED.default_role, allowed_domains = EXCLUDED.allowed_domains, auto_provision = EXCLUDED.auto_provision,
         enforce_for_all_users = EXCLUDED.enforce_for_all_users, updated_at = now()`,
      {
        bind: [
          row.tenant_id,
          row.provider,
          row.enabled,
          row.saml_entity_id,
          row.saml_sso_url,
          row.saml_acs_url,
          row.oidc_issuer,
          row.oidc_client_id,
          row.oidc_client_secret,
          row.oidc_client_secret_key_id,
          row.oidc_scopes,
          row.default_role,
          row.allowed_domains,
          row.auto_provision,
          row.enforce_for_all_users,
        ],
        transaction: t,
      },
    );
  }

  /** Key rotation: stored secrets under any key but `currentKeyId`, locked for re-encryption. */
  staleSecretsAcrossTenants(t: Transaction, currentKeyId: string): Promise<SsoConfigRow[]> {
    return selectRows<SsoConfigRow>(
      this.db,
      "SELECT * FROM sso_configs WHERE oidc_client_secret IS NOT NULL AND oidc_client_secret_key_id <> $1 ORDER BY tenant_id FOR UPDATE",
      [currentKeyId],
      t,
    );
  }

  async setSecret(t: Transaction, tenantId: string, ciphertext: string, keyId: string): Promise<void> {
    await this.db.query("UPDATE sso_configs SET oidc_client_secret = $2, oidc_client_secret_key_id = $3 WHERE tenant_id = $1", {
      bind: [tenantId, ciphertext, keyId],
      transaction: t,
    });
  }
}
