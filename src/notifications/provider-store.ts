import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { ProviderType } from "./provider-config.js";

export interface ProviderRow {
  tenant_id: string;
  id: string;
  type: ProviderType;
  name: string;
  /** The non-secret settings. */
  config: Record<string, unknown>;
  /** Which secret settings are set (names only), so that reads mask them without decrypting. */
  secret_fields: string[];
  /** AES-256-GCM ciphertext of a JSON object of the secret settings, or null when there are none. */
  secrets: string | null;
  secrets_key_id: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export type ProviderWrite = Pick<ProviderRow, "id" | "type" | "name" | "config" | "secret_fields" | "secrets" | "secrets_key_id">;

/** Notification providers. Tenant first, always; the one exception is named ...AcrossTenants. */
export class ProviderStore {
  constructor(private readonly db: Sequelize) {}

  list(tenantId: string): Promise<ProviderRow[]> {
    return selectRows<ProviderRow>(this.db, "SELECT * FROM notification_providers WHERE tenant_id = $1 ORDER BY id", [tenantId]);
  }

  /** Which of `ids` name providers of the tenant: the read model other domains validate references with. */
  async existingIds(tenantId: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    const rows = await selectRows<{ id: string }>(this.db, "SELECT id FROM notification_providers WHERE tenant_id = $1 AND id = ANY($2::uuid[])", [
      tenantId,
      [...ids],
    ]);
    return new Set(rows.map((r) => r.id));
  }

  async find(tenantId: string, id: string, t?: Transaction, forUpdate = false): Promise<ProviderRow | null> {
    const [row] = await selectRows<ProviderRow>(
      this.db,
      `SELECT * FROM notification_providers WHERE tenant_id = $1 AND id = $2${forUpdate ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  async insert(t: Transaction, tenantId: string, p: ProviderWrite): Promise<ProviderRow> {
    const [row] = await execReturning<ProviderRow>(
      this.db,
      `INSERT INTO notification_providers (tenant_id, id, type, name, config, secret_fields, secrets, secrets_key_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [tenantId, p.id, p.type, p.name, JSON.stringify(p.config), p.secret_fields, p.secrets, p.secrets_key_id],
      t,
    );
    return row;
  }

  async update(t: Transaction, tenantId: string, p: ProviderWrite): Promise<ProviderRow> {
    const [row] = await execReturning<ProviderRow>(
      this.db,
      `UPDATE notification_providers SET type = $3, name = $4, config = $5, secret_fields = $6, secrets = $7,
         secrets_key_id = $8, version = version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, p.id, p.type, p.name, JSON.stringify(p.config), p.secret_fields, p.secrets, p.secrets_key_id],
      t,
    );
    return row;
  }

  async delete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM notification_providers WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** Key rotation: every provider with secrets not under `currentKeyId`, locked for the re-encryption. */
  staleSecretsAcrossTenants(t: Transaction, currentKeyId: string): Promise<ProviderRow[]> {
    return selectRows<ProviderRow>(
      this.db,
      "SELECT * FROM notification_providers WHERE secrets IS NOT NULL AND secrets_key_id <> $1 ORDER BY tenant_id, id FOR UPDATE",
      [currentKeyId],
      t,
    );
  }

  /** Re-encrypted secrets only: the provider's version and updated_at stay, since nothing a user set changed. */
  async setSecrets(t: Transaction, tenantId: string, id: string, secrets: string, keyId: string): Promise<void> {
    await this.db.query("UPDATE notification_providers SET secrets = $3, secrets_key_id = $4 WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, id, secrets, keyId],
      transaction: t,
    });
  }
}
