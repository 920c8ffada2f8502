import { createHash } from "node:crypto";
import type { RouteRateLimit } from "../platform/method-policy.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import { normalizeEmail } from "./account-rules.js";

/** One of the windows of the /api/auth routes (docs/limits.md); each fails closed like the token endpoint. */
function bucket(name: string, limit: number, windowSeconds: number): RouteRateLimit {
  return { bucket: name, limit, windowSeconds, key: "client_id", failClosed: true, countSuccesses: false, costField: null };
}

/** Deployment overrides (RATE_LIMITS) replace these by bucket name, as for every other bucket. */
export const AUTH_RATE_LIMITS = {
  /** Sign-in attempts per e-mail address, wherever they come from: bounds guessing one person's password. */
  signInAddress: bucket("auth_sign_in", 10, 300),
  /** Sign-in attempts per source address, whichever addresses they name: bounds spraying many accounts. */
  signInSource: bucket("auth_sign_in_source", 30, 60),
  /** Mails asked for one e-mail address (registration, password reset): bounds mail bombing. */
  mailAddress: bucket("auth_mail", 5, 3600),
  /** Registrations and reset requests per source address. */
  mailSource: bucket("auth_mail_source", 20, 3600),
  /** Uses of mailed tokens (verify-email, reset confirm) per source address. */
  tokenSource: bucket("auth_token", 30, 60),
} as const;

/** Addresses are keyed by a hash, so that Redis key names hold no e-mail address. */
export function addressKey(email: string): string {
  return `email:${createHash("sha256").update(normalizeEmail(email)).digest("hex").slice(0, 32)}`;
}

/** Runs `call` within every window given, in order; the first full window refuses (429) before any work. */
export async function withinLimits<T>(policy: RateLimitPolicy, windows: Array<[RouteRateLimit, string]>, source: string, call: () => Promise<T>): Promise<T> {
  for (const [rule, key] of windows) await policy.limit(rule, { tenantId: null, clientKey: key, source }, async () => undefined);
  return call();
}
