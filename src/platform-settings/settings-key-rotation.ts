import type { Sequelize } from "sequelize";
import type { Transaction } from "../platform/db.js";
import { settingsKeyMissing, type SettingsCipher } from "../platform/settings-cipher.js";
import type { ProviderStore } from "../notifications/provider-store.js";
import { openProviderSecrets, sealProviderSecrets } from "../notifications/provider-secrets.js";
import type { PlatformSettingsStore } from "./platform-settings-store.js";
import { settingContext, settingPlaintext } from "./setting-values.js";

export interface RotationResult {
  keyId: string;
  platformSettings: number;
  providers: number;
  /** Re-sealed values of other domains' secrets, by holder name (for example `sso`). */
  others: Record<string, number>;
}

/** Another domain's sealed secrets: re-seals those not under `currentKeyId` in `t`, answering how many. */
export interface SealedSecretHolder {
  name: string;
  rotate(t: Transaction, currentKeyId: string): Promise<number>;
}

/**
 * `cli settings rotate-key`: re-encrypts every stored secret (encrypted platform settings,
 * provider credentials, and other domains' sealed secrets such as SSO client secrets) that is not under the current key, in one transaction, so afterwards the
 * old keys can be removed from SETTINGS_ENCRYPTION_KEYS. A value under a key that is no longer
 * configured stops the whole rotation, naming the key. Values do not change, so nothing is
 * audit-logged and versions stay.
 */
export async function rotateSettingsKey(
  db: Sequelize,
  cipher: SettingsCipher,
  settings: PlatformSettingsStore,
  providers: ProviderStore,
  holders: readonly SealedSecretHolder[] = [],
): Promise<RotationResult> {
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
    const others: Record<string, number> = {};
    for (const holder of holders) others[holder.name] = await holder.rotate(t, keyId);
    return { keyId, platformSettings: staleSettings.length, providers: staleProviders.length, others };
  });
}
