import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";

export const SETTING_CATEGORIES = ["email", "sms", "push"] as const;
export type SettingCategory = (typeof SETTING_CATEGORIES)[number];

export interface SettingRow {
  category: SettingCategory;
  key: string;
  /** Plaintext, or AES-256-GCM ciphertext when `encrypted`. */
  value: string;
  encrypted: boolean;
  /** The key that encrypted `value`; null for plaintext. */
  key_id: string | null;
  description: string;
  updated_at: Date;
}

export type SettingWrite = Omit<SettingRow, "updated_at">;

/**
 * Platform settings: the deployment's, not a tenant's, so this is the one store without a tenant
 * argument. Only the platform-owner tenant's admins reach it (platform-settings-service.ts).
 */
export class PlatformSettingsStore {
  constructor(private readonly db: Sequelize) {}

  list(category?: SettingCategory, t?: Transaction, forUpdate = false): Promise<SettingRow[]> {
    return selectRows<SettingRow>(
      this.db,
      `SELECT * FROM platform_settings WHERE ($1::text IS NULL OR category = $1) ORDER BY category, key${forUpdate ? " FOR UPDATE" : ""}`,
      [category ?? null],
      t,
    );
  }

  async upsert(t: Transaction, rows: SettingWrite[]): Promise<void> {
    for (const r of rows) {
      await this.db.query(
        `INSERT INTO platform_settings (category, key, value, encrypted, key_id, description) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (category, key) DO UPDATE SET value = EXCLUDED.value, encrypted = EXCLUDED.encrypted,
           key_id = EXCLUDED.key_id, description = EXCLUDED.description, updated_at = now()`,
        { bind: [r.category, r.key, r.value, r.encrypted, r.key_id, r.description], transaction: t },
      );
    }
  }

  /** Key rotation: encrypted values under any key but `currentKeyId`, locked for the re-encryption. */
  staleEncrypted(t: Transaction, currentKeyId: string): Promise<SettingRow[]> {
    return selectRows<SettingRow>(this.db, "SELECT * FROM platform_settings WHERE encrypted AND key_id <> $1 ORDER BY category, key FOR UPDATE", [currentKeyId], t);
  }

  async setCiphertext(t: Transaction, category: string, key: string, value: string, keyId: string): Promise<void> {
    await this.db.query("UPDATE platform_settings SET value = $3, key_id = $4 WHERE category = $1 AND key = $2", {
      bind: [category, key, value, keyId],
      transaction: t,
    });
  }
}
