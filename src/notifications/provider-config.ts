import { isIP } from "node:net";
import type { FieldViolation } from "../platform/errors.js";
import { isForbiddenAddress } from "./outbound-guard.js";

export const PROVIDER_TYPES = ["email", "webhook", "sms", "push"] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export function isProviderType(value: string): value is ProviderType {
  return (PROVIDER_TYPES as readonly string[]).includes(value);
}

/** What a secret reads as: it is set, and that is all a reader learns. */
export const MASK = "****";

type FieldKind = "string" | "port" | "boolean" | "url" | "emails" | "strings" | "headers" | "secret";

/**
 * The fields each type takes; anything else is refused, so a typo is a 400 rather than a silent
 * no-op. `secret` fields are credentials: write-only, encrypted at rest, `****` on read.
 */
const FIELDS: Record<ProviderType, Record<string, FieldKind>> = {
  email: { host: "string", port: "port", secure: "boolean", user: "string", password: "secret", from: "string", to: "emails" },
  webhook: { url: "url", secret: "secret", headers: "headers" },
  sms: { url: "url", authToken: "secret", secret: "secret", to: "strings" },
  push: { url: "url", authToken: "secret", secret: "secret", to: "strings" },
};
const REQUIRED: Record<ProviderType, string[]> = { email: ["to"], webhook: ["url", "secret"], sms: [], push: [] };

/** Webhook signing secrets are HMAC keys: shorter ones are guessable offline from one signed body. */
const MIN_SIGNING_SECRET = 16;
const EMAIL = /^[^\s@<>]+@[^\s@<>]+$/;
/** Header names a tenant may not set: they are the signature's, the transport's or the hop's. */
const RESERVED_HEADERS = /^(content-length|content-type|host|connection|transfer-encoding|x-webhook-.*)$/i;

export interface SplitConfig {
  /** Stored as jsonb and shown on read. */
  visible: Record<string, unknown>;
  /** Stored encrypted; `****` on read. */
  secrets: Record<string, string>;
}

function checkUrl(value: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowPrivate)) return "must be an https URL";
  if (url.username || url.password) return "must not carry credentials; use authToken or secret";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!allowPrivate && isIP(host) && isForbiddenAddress(host)) return "must not point to a private, loopback or link-local address";
  return null;
}

function checkField(kind: FieldKind, value: unknown, allowPrivate: boolean): string | null {
  switch (kind) {
    case "string":
      return typeof value === "string" && value.trim() ? null : "must be a non-empty string";
    case "secret":
      return typeof value === "string" && value ? null : "must be a non-empty string";
    case "port":
      return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65535 ? null : "must be a port number (1-65535)";
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false";
    case "url":
      return typeof value === "string" ? checkUrl(value, allowPrivate) : "must be a URL string";
    case "emails":
      return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string" && EMAIL.test(v))
        ? null
        : "must be a non-empty list of e-mail addresses";
    case "strings":
      return Array.isArray(value) && value.every((v) => typeof v === "string" && v) ? null : "must be a list of strings";
    case "headers":
      if (typeof value !== "object" || value === null || Array.isArray(value)) return "must be an object of header names to strings";
      for (const [k, v] of Object.entries(value)) {
        if (!/^[A-Za-z0-9-]+$/.test(k) || RESERVED_HEADERS.test(k)) return `may not set header ${JSON.stringify(k)}`;
        if (typeof v !== "string" || /[\r\n]/.test(v)) return `header ${k} must be a one-line string`;
      }
      return null;
  }
}

/**
 * Checks a provider's whole config for its type and splits it into what is shown and what is
 * encrypted. `to` accepts one address as a string too. Violations name `config.<field>`.
 */
export function validateProviderConfig(type: ProviderType, raw: Record<string, unknown>, allowPrivate: boolean, violations: FieldViolation[]): SplitConfig {
  const fields = FIELDS[type];
  const visible: Record<string, unknown> = {};
  const secrets: Record<string, string> = {};
  for (const [name, value0] of Object.entries(raw)) {
    const kind = fields[name];
    if (!kind) {
      violations.push({ field: `config.${name}`, message: `is not a setting of ${type} providers (allowed: ${Object.keys(fields).join(", ")})` });
      continue;
    }
    const value = (kind === "emails" || kind === "strings") && typeof value0 === "string" ? [value0] : value0;
    const problem = checkField(kind, value, allowPrivate);
    if (problem) violations.push({ field: `config.${name}`, message: problem });
    else if (kind === "secret") secrets[name] = value as string;
    else visible[name] = value;
  }
  for (const name of REQUIRED[type]) {
    if (raw[name] === undefined) violations.push({ field: `config.${name}`, message: `is required for ${type} providers` });
  }
  if (type === "webhook" && typeof secrets.secret === "string" && secrets.secret.length < MIN_SIGNING_SECRET) {
    violations.push({ field: "config.secret", message: `must be at least ${MIN_SIGNING_SECRET} characters` });
  }
  return { visible, secrets };
}

/** The config as a reader sees it: secrets replaced by `****`. */
export function maskedConfig(visible: Record<string, unknown>, secretNames: readonly string[]): Record<string, unknown> {
  return { ...visible, ...Object.fromEntries(secretNames.map((n) => [n, MASK])) };
}
