/** Role order matters: a method's min_role is satisfied by that role or any above it. */
export const ROLES = ["viewer", "editor", "admin"] as const;
export type RoleName = (typeof ROLES)[number];

export function roleAtLeast(have: RoleName, need: RoleName): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

export function isRole(value: string): value is RoleName {
  return (ROLES as readonly string[]).includes(value);
}

/** Who is calling, as established by authentication. */
export type Principal =
  | { kind: "api_key"; keyId: string; userId: string; scopes: string[] }
  | { kind: "oauth_client"; clientId: string; scopes: string[] }
  /** A person's browser session (spec 5.1): first-party, so it reaches both planes with the user's role. */
  | { kind: "session"; sid: string; userId: string; expiresAt: Date }
  | { kind: "internal" }
  /** Public methods (the token endpoint): credentials travel in the body. */
  | { kind: "anonymous" }
  /** The cron routes' shared secret (spec 5.6): an infrastructure credential of no tenant. */
  | { kind: "cron" };

/**
 * The first argument of every service method: one tenant, the acting user (if any), the effective
 * role, and the request id for logs and audit entries.
 */
export interface TenantContext {
  tenantId: string;
  /** The acting user; null for OAuth clients and infrastructure credentials. */
  userId: string | null;
  /** Who to name in audit entries: the user's name, the OAuth client's name, or `system`. */
  actorName: string;
  role: RoleName;
  principal: Principal;
  requestId: string;
}

/** Request facts a service may need beyond the message: idempotency and similar headers. */
export interface CallInfo {
  /** Lower-case header names. */
  header(name: string): string | undefined;
  remoteAddress: string;
}
