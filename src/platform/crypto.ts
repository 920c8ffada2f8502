import { createHmac, randomBytes, timingSafeEqual, createHash } from "node:crypto";

/** HMAC-SHA256 hex digest: how keys and client secrets are stored (spec 5.1 rule 5). */
export function hmacSha256Hex(secret: string, value: string): string {
  return createHmac("sha256", secret).update(value).digest("hex");
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

/**
 * Constant-time equality that is also safe when lengths differ: both sides are hashed first,
 * so neither the comparison time nor an early length check reveals anything about the secret.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
