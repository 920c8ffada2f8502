import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { ProviderRow } from "./provider-store.js";

/** Binds the ciphertext to its row: copied into another provider or tenant, it does not decrypt. */
function context(tenantId: string, id: string): string {
  return `notification_provider:${tenantId}:${id}`;
}

/** A provider's secret settings as stored: one encrypted JSON object, or nulls when there are none. */
export function sealProviderSecrets(
  cipher: SettingsCipher,
  tenantId: string,
  id: string,
  secrets: Record<string, string>,
): { secrets: string | null; secrets_key_id: string | null } {
  if (Object.keys(secrets).length === 0) return { secrets: null, secrets_key_id: null };
  const sealed = cipher.seal(JSON.stringify(secrets), context(tenantId, id));
  return { secrets: sealed.ciphertext, secrets_key_id: sealed.keyId };
}

export function openProviderSecrets(cipher: SettingsCipher, row: ProviderRow): Record<string, string> {
  if (row.secrets === null || row.secrets_key_id === null) return {};
  return JSON.parse(cipher.open({ ciphertext: row.secrets, keyId: row.secrets_key_id }, context(row.tenant_id, row.id))) as Record<string, string>;
}
