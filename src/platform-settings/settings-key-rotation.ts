import type { Sequelize } from "sequelize";
import { settingsKeyMissing, type SettingsCipher } from "../platform/settings-cipher.js";
import type { ProviderStore } from "../notifications/provider-store.js";
import { openProviderSecrets, sealProviderSecrets } from "../notifications/provider-secrets.js";
import type { PlatformSettingsStore } from "./platform-settings-store.js";
import { settingContext, settingPlaintext } from "./setting-values.js";

export interface RotationResult {
  keyId: string;
  platformSettings: number;
  providers: number;
}

/**
 * `cli settings rotate-key`: re-encrypts every stored secret (encrypted platform settings and
 * provider credentials) that is not under the current key, in one transaction, so afterwards the
 * old keys can be removed from SETTINGS_ENCRYPTION_KEYS. A value under a key that is no longer
 * configured stops the whole rotation, naming the key. Values do not change, so nothing is
 * audit-logged and versions stay.
 */
export async function rotateSettingsKey(db: Sequelize, cipher: SettingsCipher, settings: PlatformSettingsStore, providers: ProviderStore): Promise<RotationResult> {
  const keyId = cipher.currentKeyId;
  if (keyId === null) throw settingsKeyMissing();
  return db.transaction(async (t) => {
    const staleSettings = await settings.staleEncrypted(t, keyId);
    for (const row of staleSettings) {
      const sealed = cipher.seal(settingPlaintext(cipher, row), settingContext(row.category, row.key));
      await settings.setCiphertext(t, row.category, row.key, sealed.ciphertext, sealed.keyId);
    }
    const staleProviders = await providers.staleSecretsAcrossTenants(t, keyId);
    for (const row of staleProviders) {
      const sealed = sealProviderSecrets(cipher, row.tenant_id, row.id, openProviderSecrets(cipher, row));
      await providers.setSecrets(t, row.tenant_id, row.id, sealed.secrets!, sealed.secrets_key_id!);
    }
    return { keyId, platformSettings: staleSettings.length, providers: staleProviders.length };
  });
}
