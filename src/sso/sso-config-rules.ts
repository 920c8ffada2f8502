import { isIP } from "node:net";
import { isRole, type RoleName } from "../platform/context.js";
import type { FieldViolation } from "../platform/errors.js";
import type { SsoProvider } from "./sso-config-store.js";

/** The tenant's SSO settings as the domain sees them (the secret lives apart: write-only). */
export interface SsoSettings {
  provider: SsoProvider;
  enabled: boolean;
  samlEntityId: string;
  samlSsoUrl: string;
  samlAcsUrl: string;
  oidcIssuer: string;
  oidcClientId: string;
  oidcScopes: string;
  defaultRole: RoleName;
  allowedDomains: string[];
  autoProvision: boolean;
  enforceForAllUsers: boolean;
}

/** A `configure` request: what was sent, as sent (values not yet checked). */
export interface SsoSettingsPatch {
  provider?: string;
  enabled?: boolean;
  samlEntityId?: string;
  samlSsoUrl?: string;
  samlAcsUrl?: string;
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcScopes?: string;
  defaultRole?: string;
  allowedDomains?: unknown[];
  autoProvision?: boolean;
  enforceForAllUsers?: boolean;
}

export const DEFAULT_SSO_SETTINGS: SsoSettings = {
  provider: "oidc",
  enabled: true,
  samlEntityId: "",
  samlSsoUrl: "",
  samlAcsUrl: "",
  oidcIssuer: "",
  oidcClientId: "",
  oidcScopes: "openid email profile",
  defaultRole: "viewer",
  allowedDomains: [],
  autoProvision: false,
  enforceForAllUsers: false,
};

const MAX_TEXT = 2048;
const MAX_DOMAINS = 100;
const MAX_SECRET = 1024;
/** RFC 6749 3.3 scope tokens. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/** Sign-in works through this configuration: OIDC, enabled, with an issuer and a client id. SAML never is (2.12). */
export function isActive(s: SsoSettings): boolean {
  return s.provider === "oidc" && s.enabled && s.oidcIssuer !== "" && s.oidcClientId !== "";
}

/** An e-mail address's domain, lower case; "" when it has none. */
export function emailDomain(email: string): string {
  const at = email.lastIndexOf("@");
  return at < 0 ? "" : email.slice(at + 1).toLowerCase();
}

/** Spec 2.12: an empty list allows every domain. */
export function domainAllowed(email: string, allowedDomains: readonly string[]): boolean {
  return allowedDomains.length === 0 || allowedDomains.includes(emailDomain(email));
}

/**
 * Identity-provider URLs must be https; http only where OUTBOUND_ALLOW_PRIVATE=true (tests, closed
 * networks). Literal private addresses are refused here already; names are checked on every
 * connection by the outbound guard. A message naming what is wrong, or null.
 */
export function providerUrlProblem(raw: string, allowPrivate: boolean, isForbidden: (address: string) => boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowPrivate)) return "must be an https URL";
  if (url.username || url.password) return "must not carry credentials";
  if (url.search || url.hash) return "must not carry a query or fragment";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!allowPrivate && isIP(host) && isForbidden(host)) return "must not point at a private, loopback or internal address";
  return null;
}

/**
 * Where the provider sends the browser back: an absolute URL without fragment or query (the code
 * exchange repeats it exactly), https except on loopback hosts, where browsers and providers
 * accept http for local development.
 */
export function redirectUriProblem(raw: string): string | null {
  if (raw.length > MAX_TEXT) return `must be at most ${MAX_TEXT} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL";
  }
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) return "must be an https URL (http only on localhost)";
  if (url.username || url.password) return "must not carry credentials";
  if (url.search || url.hash) return "must not carry a query or fragment";
  return null;
}

export interface CheckedSettings {
  settings: SsoSettings;
  violations: FieldViolation[];
}

/**
 * Applies a `configure` patch to what is stored (or the defaults) and checks the result, naming
 * each problem by its request path (`config.<field>`). `secretStored` tells whether a client secret
 * will exist after the write. `urlProblem` checks the issuer (providerUrlProblem, bound to the
 * deployment's outbound rule).
 */
export function applySsoPatch(
  stored: SsoSettings | null,
  patch: SsoSettingsPatch,
  urlProblem: (raw: string) => string | null,
): CheckedSettings {
  const violations: FieldViolation[] = [];
  const bad = (field: string, message: string) => violations.push({ field: `config.${field}`, message });
  const s: SsoSettings = { ...(stored ?? DEFAULT_SSO_SETTINGS) };

  if (patch.provider !== undefined) {
    if (patch.provider === "oidc" || patch.provider === "saml") s.provider = patch.provider;
    else bad("provider", "must be oidc or saml (saml is reserved: stored, not active)");
  }
  if (patch.enabled !== undefined) s.enabled = patch.enabled;
  if (patch.autoProvision !== undefined) s.autoProvision = patch.autoProvision;
  if (patch.enforceForAllUsers !== undefined) s.enforceForAllUsers = patch.enforceForAllUsers;
  for (const field of ["samlEntityId", "samlSsoUrl", "samlAcsUrl", "oidcClientId"] as const) {
    const v = patch[field];
    if (v === undefined) continue;
    if (v.length > MAX_TEXT) bad(field, `must be at most ${MAX_TEXT} characters`);
    else s[field] = v.trim();
  }
  for (const field of ["samlSsoUrl", "samlAcsUrl"] as const) {
    if (patch[field] && s[field] && !/^https?:\/\//i.test(s[field])) bad(field, "must be an http or https URL");
  }
  if (patch.oidcIssuer !== undefined) {
    const issuer = patch.oidcIssuer.trim().replace(/\/+$/, "");
    const problem = issuer === "" ? null : issuer.length > MAX_TEXT ? `must be at most ${MAX_TEXT} characters` : urlProblem(issuer);
    if (problem) bad("oidcIssuer", problem);
    else s.oidcIssuer = issuer;
  }
  if (patch.oidcScopes !== undefined) {
    const scopes = patch.oidcScopes.trim().split(/\s+/).filter(Boolean);
    if (scopes.some((x) => !SCOPE_TOKEN.test(x))) bad("oidcScopes", "must be space-separated scope names");
    else if (!scopes.includes("openid")) bad("oidcScopes", "must include openid");
    else if (patch.oidcScopes.length > MAX_TEXT) bad("oidcScopes", `must be at most ${MAX_TEXT} characters`);
    else s.oidcScopes = [...new Set(scopes)].join(" ");
  }
  if (patch.defaultRole !== undefined) {
    if (isRole(patch.defaultRole)) s.defaultRole = patch.defaultRole;
    else bad("defaultRole", "must be admin, editor or viewer");
  }
  if (patch.allowedDomains !== undefined) {
    if (patch.allowedDomains.length > MAX_DOMAINS) bad("allowedDomains", `must list at most ${MAX_DOMAINS} domains`);
    const domains: string[] = [];
    patch.allowedDomains.forEach((d, i) => {
      const domain = typeof d === "string" ? d.trim().toLowerCase().replace(/^@/, "") : null;
      if (domain === null || !DOMAIN.test(domain)) bad(`allowedDomains[${i}]`, "must be a domain name such as example.com");
      else if (!domains.includes(domain)) domains.push(domain);
    });
    s.allowedDomains = domains;
  }
  if (s.provider === "oidc" && s.enabled) {
    const flagged = (field: string) => violations.some((v) => v.field === `config.${field}`);
    if (!s.oidcIssuer && !flagged("oidcIssuer")) bad("oidcIssuer", "is required for an enabled OIDC configuration");
    if (!s.oidcClientId) bad("oidcClientId", "is required for an enabled OIDC configuration");
  }
  // Enforcing SSO without a working sign-in would lock every user out.
  if (s.enforceForAllUsers && !isActive(s)) bad("enforceForAllUsers", "needs an enabled OIDC configuration (SAML is not active)");
  return { settings: s, violations };
}

/** The client secret as sent: trimmed, bounded; "" clears it. A message naming the problem, or null. */
export function secretProblem(secret: string): string | null {
  return secret.length > MAX_SECRET ? `must be at most ${MAX_SECRET} characters` : null;
}
