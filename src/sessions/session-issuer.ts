import { randomUUID } from "node:crypto";
import { SignJWT, jwtVerify } from "jose";
import type { Secrets } from "../platform/secrets.js";
import { isRole, type RoleName } from "../platform/context.js";

/** Name of the session cookie (spec 5.1 "Session"). */
export const SESSION_COOKIE = "ds_session";
/** Spec 5.1: about 30 minutes, renewed when a request arrives in its second half. */
export const SESSION_LIFETIME_SECONDS = 30 * 60;
/**
 * Sessions are signed with the same secret as access tokens (spec 5.1 rule 6 allows the session secret
 * as its fallback), so a distinct audience keeps one kind from ever being accepted as the other.
 */
const SESSION_AUDIENCE = "decisioning-session";
const SESSION_ISSUER = "decisioning-service";

export interface SessionUser {
  tenantId: string;
  userId: string;
  role: RoleName;
  tokenVersion: number;
}

export interface SessionClaims extends SessionUser {
  /** Session id: sign-out revokes it server-side until its expiry. */
  sid: string;
  expiresAt: Date;
}

export interface IssuedSession {
  token: string;
  sid: string;
  expiresAt: Date;
  /** The whole Set-Cookie header value. */
  setCookie: string;
}

/**
 * Signs and verifies the stateless session token (jose, HS256) and formats its cookie: HttpOnly,
 * SameSite=Lax, and Secure unless the operator serves plain HTTP (`secureCookie` false).
 * One issuer for password sign-in, the global identity provider and tenant SSO.
 */
export class SessionIssuer {
  constructor(
    private readonly secrets: Secrets,
    /** Whether cookies this service sets carry `Secure` (SESSION_COOKIE_SECURE): other sign-in cookies follow it too. */
    readonly secureCookie: boolean,
    private readonly now: () => number = Date.now,
  ) {}

  private key(): Uint8Array {
    return new TextEncoder().encode(this.secrets.jwtSigningSecret());
  }

  /** A new session, or the renewal of `sid` when given (same id, so sign-out still ends it). */
  async issue(user: SessionUser, sid: string = randomUUID()): Promise<IssuedSession> {
    const issuedAt = Math.floor(this.now() / 1000);
    const expires = issuedAt + SESSION_LIFETIME_SECONDS;
    const token = await new SignJWT({ tid: user.tenantId, role: user.role, tv: user.tokenVersion, sid })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(user.userId)
      .setIssuer(SESSION_ISSUER)
      .setAudience(SESSION_AUDIENCE)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expires)
      .sign(this.key());
    const expiresAt = new Date(expires * 1000);
    return { token, sid, expiresAt, setCookie: this.cookie(token, SESSION_LIFETIME_SECONDS) };
  }

  /** The claims of a valid, unexpired token, else null (the caller answers 401). */
  async verify(token: string): Promise<SessionClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key(), {
        algorithms: ["HS256"],
        issuer: SESSION_ISSUER,
        audience: SESSION_AUDIENCE,
        currentDate: new Date(this.now()),
      });
      const { sub, tid, role, tv, sid, exp } = payload as Record<string, unknown>;
      if (typeof sub !== "string" || typeof tid !== "string" || typeof role !== "string" || !isRole(role)) return null;
      if (typeof tv !== "number") return null;
      if (typeof sid !== "string" || typeof exp !== "number") return null;
      return { userId: sub, tenantId: tid, role, tokenVersion: tv, sid, expiresAt: new Date(exp * 1000) };
    } catch {
      return null;
    }
  }

  /** The Set-Cookie value that removes the cookie from the browser. */
  clearCookie(): string {
    return this.cookie("", 0);
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    const parts = [`${SESSION_COOKIE}=${value}`, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${maxAgeSeconds}`];
    if (this.secureCookie) parts.push("Secure");
    return parts.join("; ");
  }
}

/** The session token from a Cookie header, if present. */
export function sessionTokenOf(cookieHeader: string | undefined): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || null;
  }
  return null;
}
