import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { AppError, unavailable } from "./errors.js";
import { MIN_SECRET_BYTES } from "./secrets.js";

/** One configured key: its id (stored beside every value it encrypted) and its secret. */
export interface SettingsKey {
  id: string;
  secret: string;
}

/** A value as it is stored: ciphertext and the id of the key that made it. */
export interface SealedValue {
  ciphertext: string;
  keyId: string;
}

/**
 * AES-256-GCM for stored secrets: encrypted platform settings and notification-provider credentials.
 * The first configured key encrypts; every configured key decrypts, so a key can be rotated by
 * putting a new one first and running `cli settings rotate-key` (docs/notifications.md). Each value
 * is bound to where it is stored (`context`, the additional authenticated data), so a ciphertext
 * copied into another row or tenant does not decrypt.
 */
export interface SettingsCipher {
  /** Whether a key is configured; without one, encrypted values can be neither stored nor read. */
  readonly configured: boolean;
  /** The id of the key new values are encrypted under, or null when none is configured. */
  readonly currentKeyId: string | null;
  seal(plaintext: string, context: string): SealedValue;
  open(sealed: SealedValue, context: string): string;
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,32}$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** HKDF `info`: a key derived for this use is useless for any other use of the same secret. */
const HKDF_INFO = "decisioning-service settings encryption v1";

/**
 * SETTINGS_ENCRYPTION_KEYS (`id:secret,id:secret`, the first encrypts) or SETTINGS_ENCRYPTION_KEY
 * (one secret, whose id is derived from it). Secrets are taken as their UTF-8 bytes, like
 * API_KEY_PEPPER, and must be at least 32 bytes. Throws a message naming the variable.
 */
export function parseSettingsKeys(list: string | null, single: string | null): SettingsKey[] {
  if (list !== null) {
    const keys = list.split(",").map((entry, i) => {
      const at = entry.indexOf(":");
      const id = entry.slice(0, at).trim();
      const secret = entry.slice(at + 1).trim();
      if (at < 0 || !KEY_ID.test(id)) throw new Error(`SETTINGS_ENCRYPTION_KEYS entry ${i + 1} must be <id>:<secret> with an id of letters, digits, _ . -`);
      if (Buffer.byteLength(secret, "utf8") < MIN_SECRET_BYTES) throw new Error(`SETTINGS_ENCRYPTION_KEYS key "${id}" is shorter than ${MIN_SECRET_BYTES} bytes`);
      return { id, secret };
    });
    if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new Error("SETTINGS_ENCRYPTION_KEYS names a key id twice");
    return keys;
  }
  if (single !== null) {
    if (Buffer.byteLength(single, "utf8") < MIN_SECRET_BYTES) throw new Error(`SETTINGS_ENCRYPTION_KEY is shorter than ${MIN_SECRET_BYTES} bytes`);
    return [{ id: derivedKeyId(single), secret: single }];
  }
  return [];
}

/**
 * A single key's id, derived so that it is stable across restarts and differs between keys. It is a
 * truncated hash of a ≥32-byte secret under a separate label, which reveals nothing usable about it.
 */
export function derivedKeyId(secret: string): string {
  return `k${createHash("sha256").update("settings-key-id\0").update(secret).digest("hex").slice(0, 12)}`;
}

function aesKey(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.alloc(0), HKDF_INFO, 32));
}

/** Refusal to store or read an encrypted value without a key: a deployment problem, hence 503. */
export function settingsKeyMissing(): AppError {
  return unavailable(
    "SETTINGS_KEY_NOT_CONFIGURED",
    "SETTINGS_ENCRYPTION_KEY (or SETTINGS_ENCRYPTION_KEYS) is not set; the server cannot store or read encrypted values until it is configured",
  );
}

export function createSettingsCipher(keys: readonly SettingsKey[]): SettingsCipher {
  const derived = new Map(keys.map((k) => [k.id, aesKey(k.secret)]));
  const current = keys[0]?.id ?? null;
  return {
    configured: current !== null,
    currentKeyId: current,
    seal(plaintext, context) {
      if (current === null) throw settingsKeyMissing();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", derived.get(current)!, iv);
      cipher.setAAD(Buffer.from(context, "utf8"));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return { ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64"), keyId: current };
    },
    open(sealed, context) {
      if (current === null) throw settingsKeyMissing();
      const key = derived.get(sealed.keyId);
      if (!key) {
        throw unavailable("SETTINGS_KEY_UNKNOWN", `a stored value is encrypted under key "${sealed.keyId}", which is not configured; add it to SETTINGS_ENCRYPTION_KEYS`);
      }
      const raw = Buffer.from(sealed.ciphertext, "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
      } catch (cause) {
        throw new AppError({ code: "INTERNAL", reason: "SETTINGS_DECRYPT_FAILED", message: "a stored encrypted value could not be decrypted", cause });
      }
    },
  };
}
