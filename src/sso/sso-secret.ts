import type { SealedValue, SettingsCipher } from "../platform/settings-cipher.js";
import type { SsoConfigRow } from "./sso-config-store.js";

/** Binds the ciphertext to its tenant: copied into another tenant's row, it does not decrypt. */
function context(tenantId: string): string {
  return `sso_config:${tenantId}`;
}

export function sealSsoSecret(cipher: SettingsCipher, tenantId: string, secret: string): SealedValue {
  return cipher.seal(secret, context(tenantId));
}

/** The stored OIDC client secret in plain text, or null when none is stored. */
export function openSsoSecret(cipher: SettingsCipher, row: SsoConfigRow): string | null {
  if (row.oidc_client_secret === null || row.oidc_client_secret_key_id === null) return null;
  return cipher.open({ ciphertext: row.oidc_client_secret, keyId: row.oidc_client_secret_key_id }, context(row.tenant_id));
}
