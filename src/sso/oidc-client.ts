import { createHash } from "node:crypto";
import * as client from "openid-client";
import type { OutboundConfig } from "../config.js";
import { AppError, isAppError, unauthenticated } from "../platform/errors.js";
import { TtlCache } from "../platform/ttl-cache.js";
import { PostFailure } from "../notifications/guarded-post.js";
import { guardedFetch } from "./guarded-fetch.js";

/** Which provider and which client at it: the global sign-in's (AUTH_OIDC_*) or a tenant's (2.12). */
export interface OidcClientSettings {
  issuer: string;
  clientId: string;
  /** null: a public client, which authenticates by PKCE alone. */
  clientSecret: string | null;
}

/** What the callback needs to finish what the authorization request began; kept server-side. */
export interface OidcAttempt {
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
}

export interface OidcIdentity {
  subject: string;
  email: string;
  name: string | null;
}

/** Discovery is re-read at most hourly; the key set is refetched by openid-client on an unknown `kid`. */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
const TIMEOUT_SECONDS = 10;

/**
 * The one OpenID Connect relying party of the service (openid-client 6), used by the global
 * identity-provider sign-in and by every tenant's SSO: discovery, the authorization code flow with
 * PKCE (S256), `state` and `nonce`, the code exchange and ID token verification (issuer, audience,
 * expiry, nonce, signature by the discovered key set). Every request goes through the outbound SSRF
 * guard; plain http issuers only with OUTBOUND_ALLOW_PRIVATE=true.
 */
export class OidcClient {
  /** Keyed by issuer, client id and a hash of the secret, so a reconfigured client is discovered afresh. */
  private readonly configurations = new TtlCache<client.Configuration>(DISCOVERY_TTL_MS, 1000);
  private readonly fetch: ReturnType<typeof guardedFetch>;

  constructor(private readonly outbound: OutboundConfig) {
    this.fetch = guardedFetch(outbound);
  }

  /** The provider's authorization URL, and the secrets its callback must present again (single use). */
  async authorizationUrl(settings: OidcClientSettings, request: { redirectUri: string; scope: string; state: string }): Promise<{ url: string; attempt: OidcAttempt }> {
    const config = await this.configuration(settings);
    const codeVerifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: request.redirectUri,
      scope: request.scope,
      state: request.state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
    });
    return { url: url.href, attempt: { nonce, codeVerifier, redirectUri: request.redirectUri } };
  }

  /**
   * Exchanges the code of `callbackQuery` and verifies the ID token; the e-mail comes from the ID
   * token or, when the provider keeps it for the userinfo endpoint, from there (same subject).
   * A refused code, a failed check or a provider error is 401; a provider out of reach is 503.
   */
  async complete(settings: OidcClientSettings, callbackQuery: URLSearchParams, state: string, attempt: OidcAttempt): Promise<OidcIdentity> {
    const config = await this.configuration(settings);
    const callback = new URL(attempt.redirectUri);
    for (const [k, v] of callbackQuery) callback.searchParams.append(k, v);
    try {
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: attempt.codeVerifier,
        expectedNonce: attempt.nonce,
        expectedState: state,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      let info: Record<string, unknown> = claims;
      if (typeof claims.email !== "string") info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      const email = typeof info.email === "string" ? info.email.trim() : "";
      if (!email) throw unauthenticated("The identity provider did not share an e-mail address (ask for the `email` scope)", "SSO_NO_EMAIL");
      // Spec 5.5: users arriving this way are verified, unless the provider itself says otherwise.
      if (info.email_verified === false) throw unauthenticated("The identity provider has not verified this e-mail address", "SSO_EMAIL_UNVERIFIED");
      const name = typeof info.name === "string" && info.name.trim() ? info.name.trim() : null;
      return { subject: claims.sub, email, name };
    } catch (err) {
      throw classify(err);
    }
  }

  private configuration(settings: OidcClientSettings): Promise<client.Configuration> {
    const secretHash = settings.clientSecret === null ? "-" : createHash("sha256").update(settings.clientSecret).digest("hex");
    const key = `${settings.issuer}\n${settings.clientId}\n${secretHash}`;
    return this.configurations.get(key, async () => {
      try {
        return await client.discovery(
          new URL(settings.issuer),
          settings.clientId,
          undefined,
          settings.clientSecret === null ? client.None() : client.ClientSecretBasic(settings.clientSecret),
          {
            [client.customFetch]: this.fetch as client.CustomFetch,
            timeout: TIMEOUT_SECONDS,
            // The guard enforces https itself (and allows http only when private addresses are allowed).
            execute: this.outbound.allowPrivate ? [client.allowInsecureRequests] : [],
          },
        );
      } catch (err) {
        throw classify(err, true);
      }
    });
  }
}

function causeChain(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = err; e && chain.length < 8; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/**
 * A provider that cannot be reached (or may not be, by the SSRF guard) is 503 naming why; during
 * discovery any other failure is too, since no user input is involved. Everything after it is the
 * callback's fault: 401, with the library's reason kept as the cause for the log, not the client.
 */
function classify(err: unknown, discovering = false): AppError {
  if (isAppError(err)) return err;
  const chain = causeChain(err);
  const outbound = chain.find((e): e is PostFailure => e instanceof PostFailure);
  if (outbound || discovering || chain.some((e) => e instanceof client.ClientError && ["OAUTH_TIMEOUT", "OAUTH_ABORT"].includes(e.code ?? ""))) {
    return new AppError({
      code: "UNAVAILABLE",
      reason: "IDENTITY_PROVIDER_UNAVAILABLE",
      message: `The identity provider could not be used: ${outbound ? outbound.message : discovering ? "its discovery document was not valid" : "it did not answer in time"}`,
      cause: err,
    });
  }
  return new AppError({ code: "UNAUTHENTICATED", reason: "SSO_TOKEN_REJECTED", message: "The identity provider's answer was refused: the code or ID token is not valid", cause: err });
}
