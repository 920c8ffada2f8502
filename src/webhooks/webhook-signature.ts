import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { AppError, unauthenticated } from "../platform/errors.js";

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/**
 * Checks `sha256=<hex HMAC-SHA256 of the raw body>` in constant time (spec 4.18, 5.6). A secret that
 * is not configured refuses every request, so that a deployment that forgot it never accepts unsigned
 * callbacks; every failure is a 401 whose message names the header but never the expected value.
 */
export function verifyBodySignature(secret: string | null, secretName: string, headerName: string, header: string | undefined, body: Uint8Array): void {
  if (!secret) throw unauthenticated(`Webhook signatures cannot be verified: ${secretName} is not configured`, "WEBHOOK_SECRET_NOT_CONFIGURED");
  if (!header) throw unauthenticated(`${headerName}: header is missing`, "WEBHOOK_SIGNATURE_MISSING");
  const given = SIGNATURE.exec(header.trim());
  const expected = createHmac("sha256", secret).update(body).digest();
  if (!given || !timingSafeEqual(expected, Buffer.from(given[1], "hex"))) {
    throw unauthenticated(`${headerName}: signature does not match the body`, "WEBHOOK_SIGNATURE_INVALID");
  }
}

/** Equal strings, compared in time that depends on neither (digests first, so lengths do not leak). */
export function sameSecret(expected: string, given: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(expected), digest(given));
}

/** The handshake's refusal (spec 4.18, 7: a bad webhook verify token is 403). */
export function verifyTokenRefused(message: string): AppError {
  return new AppError({ code: "PERMISSION_DENIED", reason: "WEBHOOK_VERIFY_TOKEN_INVALID", message });
}
