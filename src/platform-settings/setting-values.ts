import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { SettingRow } from "./platform-settings-store.js";

/** Binds a setting's ciphertext to its category and key. */
export function settingContext(category: string, key: string): string {
  return `platform_setting:${category}:${key}`;
}

/** A stored setting's plaintext (decrypted when it is encrypted). */
export function settingPlaintext(cipher: SettingsCipher, row: SettingRow): string {
  if (!row.encrypted || row.key_id === null) return row.value;
  return cipher.open({ ciphertext: row.value, keyId: row.key_id }, settingContext(row.category, row.key));
}
