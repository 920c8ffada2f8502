import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { AppError } from "./errors.js";

export const MIN_SECRET_BYTES = 32;

/**
 * Machine secrets (spec 5.1 rules 5-6). A missing or short secret is not a start-up failure:
 * the server still serves what does not need it, and every operation that does fails with an
 * explicit error instead of silently using a development fallback.
 */
export interface Secrets {
  apiKeyPepper(): string;
  jwtSigningSecret(): string;
  /** Human-readable problems for the start-up log. */
  problems(): string[];
}

function check(name: string, value: string | null): string | null {
  if (value === null) return `${name} is not set`;
  if (Buffer.byteLength(value, "utf8") < MIN_SECRET_BYTES) return `${name} is shorter than ${MIN_SECRET_BYTES} bytes`;
  return null;
}

export function createSecrets(values: { apiKeyPepper: string | null; jwtSigningSecret: string | null }): Secrets {
  const get = (name: string, value: string | null): string => {
    const problem = check(name, value);
    if (problem) {
      throw new AppError({
        code: "UNAVAILABLE",
        reason: "SECRET_NOT_CONFIGURED",
        message: `${problem}; the server cannot create or verify credentials until it is configured`,
      });
    }
    return value!;
  };
  return {
    apiKeyPepper: () => get("API_KEY_PEPPER", values.apiKeyPepper),
    jwtSigningSecret: () => get("JWT_SIGNING_SECRET", values.jwtSigningSecret),
    problems: () =>
      [check("API_KEY_PEPPER", values.apiKeyPepper), check("JWT_SIGNING_SECRET", values.jwtSigningSecret)].filter(
        (p): p is string => p !== null,
      ),
  };
}

export interface LocalSecretsFile {
  apiKeyPepper: string;
  jwtSigningSecret: string;
  /** Password of the embedded Postgres superuser. */
  postgresPassword: string;
  /** Encrypts platform settings and provider secrets when no SETTINGS_ENCRYPTION_KEY is set. */
  settingsEncryptionKey: string;
}

/**
 * Single-node default only: secrets generated once with strong randomness and kept beside the
 * local data (mode 0600), so restarts keep existing keys and tokens valid.
 */
export function loadOrCreateLocalSecrets(dataDir: string): LocalSecretsFile {
  const file = join(dataDir, "secrets.json");
  if (existsSync(file)) {
    const existing = JSON.parse(readFileSync(file, "utf8")) as Partial<LocalSecretsFile>;
    if (existing.settingsEncryptionKey) return existing as LocalSecretsFile;
    // A data directory from before settings encryption: add its key, keep everything else.
    const upgraded = { ...existing, settingsEncryptionKey: randomBytes(48).toString("base64url") } as LocalSecretsFile;
    writeFileSync(file, JSON.stringify(upgraded, null, 2), { mode: 0o600 });
    return upgraded;
  }
  mkdirSync(dataDir, { recursive: true });
  const secrets: LocalSecretsFile = {
    apiKeyPepper: randomBytes(48).toString("base64url"),
    jwtSigningSecret: randomBytes(48).toString("base64url"),
    postgresPassword: randomBytes(24).toString("base64url"),
    settingsEncryptionKey: randomBytes(48).toString("base64url"),
  };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600, flag: "wx" });
  return secrets;
}
