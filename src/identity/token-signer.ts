import { SignJWT, jwtVerify, errors as joseErrors } from "jose";
import type { Secrets } from "../platform/secrets.js";
import { unauthenticated } from "../platform/errors.js";
import { isRole, type RoleName } from "../platform/context.js";

/** Fixed issuer of every access token (spec 4.1 claim `iss`). */
export const TOKEN_ISSUER = "decisioning-service";
export const TOKEN_LIFETIME_SECONDS = 3600;

export interface AccessTokenClaims {
  sub: string;
  tid: string;
  role: RoleName;
  scopes: string[];
}

/** HS256 access tokens through jose. Verification pins the algorithm and checks issuer and expiry. */
export class TokenSigner {
  constructor(private readonly secrets: Secrets) {}

  private key(): Uint8Array {
    return new TextEncoder().encode(this.secrets.jwtSigningSecret());
  }

  sign(claims: AccessTokenClaims): Promise<string> {
    return new SignJWT({ tid: claims.tid, role: claims.role, scopes: claims.scopes })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.sub)
      .setIssuer(TOKEN_ISSUER)
      .setIssuedAt()
      .setExpirationTime(`${TOKEN_LIFETIME_SECONDS}s`)
      .sign(this.key());
  }

  async verify(token: string): Promise<AccessTokenClaims> {
    const key = this.key();
    // Spec 5.1 rule 6: without the pepper, token verification fails too (the tokens' clients are
    // known by peppered secrets), with the same explicit error, not only the routes that hash.
    this.secrets.apiKeyPepper();
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: ["HS256"], issuer: TOKEN_ISSUER });
      const { sub, tid, role, scopes } = payload as Record<string, unknown>;
      if (
        typeof sub !== "string" ||
        typeof tid !== "string" ||
        typeof role !== "string" ||
        !isRole(role) ||
        !Array.isArray(scopes)
      ) {
        throw unauthenticated("Access token is missing required claims");
      }
      return { sub, tid, role, scopes: scopes.map(String) };
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthenticated("Access token has expired", "TOKEN_EXPIRED");
      if (err instanceof joseErrors.JOSEError) throw unauthenticated("Invalid access token", "INVALID_TOKEN");
      throw err;
    }
  }
}
