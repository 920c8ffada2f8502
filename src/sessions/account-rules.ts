import { charCount } from "../core/char-count.js";
import type { FieldViolation } from "../platform/errors.js";

/** Spec 5.5's password rule and the bounds of names and addresses; pure, so every route and test shares one copy. */
export const PASSWORD_MIN_LENGTH = 8;
/** argon2 takes any length; this bounds the work one request can ask for. */
export const PASSWORD_MAX_LENGTH = 256;
export const NAME_MAX_LENGTH = 100;
export const TENANT_NAME_MAX_LENGTH = 100;
/** RFC 5321: a forward-path is at most 256 octets, of which the address is 254. */
export const EMAIL_MAX_LENGTH = 254;

/** Each failed part of spec 5.5's rule, named, so that a form can show them all at once. */
export function passwordViolations(password: unknown, field = "password"): FieldViolation[] {
  if (typeof password !== "string" || password === "") return [{ field, message: "is required" }];
  const out: FieldViolation[] = [];
  if (charCount(password) < PASSWORD_MIN_LENGTH) out.push({ field, message: `must be at least ${PASSWORD_MIN_LENGTH} characters` });
  if (password.length > PASSWORD_MAX_LENGTH) out.push({ field, message: `must be at most ${PASSWORD_MAX_LENGTH} characters` });
  if (!/\p{Lu}/u.test(password)) out.push({ field, message: "must contain at least one upper-case letter" });
  if (!/\p{Nd}/u.test(password)) out.push({ field, message: "must contain at least one digit" });
  return out;
}

/**
 * A deliverable-looking address: one `@`, a local part of printable ASCII without spaces or quotes,
 * and a domain of dot-separated labels (an IDN in its ASCII form). Stricter than RFC 5322 on purpose:
 * quoted local parts and address literals are legal but never typed into a sign-up form.
 */
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

export function emailViolations(email: unknown, field = "email"): FieldViolation[] {
  if (typeof email !== "string" || email.trim() === "") return [{ field, message: "is required" }];
  const value = email.trim();
  if (value.length > EMAIL_MAX_LENGTH) return [{ field, message: `must be at most ${EMAIL_MAX_LENGTH} characters` }];
  if (!EMAIL.test(value) || value.includes("..")) return [{ field, message: "must be an e-mail address like name@example.com" }];
  return [];
}

/** Addresses compare case-insensitively (users_email_lower); they are stored lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function displayNameViolations(value: unknown, field: string, max: number, required: boolean): FieldViolation[] {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    return required ? [{ field, message: "is required" }] : [];
  }
  if (typeof value !== "string") return [{ field, message: "must be a string" }];
  if (charCount(value.trim()) > max) return [{ field, message: `must be at most ${max} characters` }];
  // Names appear in mails and pages: no control characters (tab and newline included).
  if (/[\p{Cc}\p{Cf}]/u.test(value)) return [{ field, message: "must not contain control characters" }];
  return [];
}

/** Spec 5.5: the personal tenant's display name when none is given. */
export function defaultTenantName(name: string): string {
  return `${name}'s Workspace`;
}
