import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export interface TestAccount {
  email: string;
  emailVerified?: boolean;
  name?: string;
}

export interface TestClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

/**
 * A real OpenID provider (oidc-provider 8) on loopback, with its development login and consent
 * pages, which the test drives over HTTP like a browser would. Claims are released by the userinfo
 * endpoint (the provider's default), so the relying party's userinfo path is exercised too.
 */
export interface TestOpenIdProvider {
  issuer: string;
  /** Login name → what the provider says about that person. */
  accounts: Map<string, TestAccount>;
  /** Lifetime of ID tokens issued from now on; a negative one issues already-expired tokens. */
  idTokenTtlSeconds: number;
  /** When set, the token endpoint answers with this ID token instead of its own (a substitution attack). */
  substituteIdToken: string | null;
  /** Signs `login` in at the provider from `authUrl` on; the redirect back to the client (code, state). */
  signIn(authUrl: string, login: string): Promise<URL>;
  /** A whole code flow as `client`, for a nonce of the test's choosing: the ID token the provider issued. */
  idTokenFor(client: TestClient, login: string, nonce: string): Promise<string>;
  close(): Promise<void>;
}

class CookieJar {
  private readonly cookies = new Map<string, string>();
  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

export async function startOpenIdProvider(clients: TestClient[]): Promise<TestOpenIdProvider> {
  let handler: ((req: never, res: never) => void) | null = null;
  const server: Server = createServer((req, res) => handler!(req as never, res as never));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state: TestOpenIdProvider = {
    issuer,
    accounts: new Map(),
    idTokenTtlSeconds: 300,
    substituteIdToken: null,
    signIn: (authUrl, login) => drive(issuer, authUrl, login),
    async idTokenFor(client, login, nonce) {
      const redirectUri = client.redirectUris[0];
      const auth = new URL(`${issuer}/auth`);
      for (const [k, v] of Object.entries({ client_id: client.clientId, response_type: "code", scope: "openid email", redirect_uri: redirectUri, nonce, state: "test" })) {
        auth.searchParams.set(k, v);
      }
      const back = await drive(issuer, auth.href, login);
      const res = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString("base64")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ grant_type: "authorization_code", code: back.searchParams.get("code")!, redirect_uri: redirectUri }),
      });
      const body = (await res.json()) as { id_token?: string };
      if (!body.id_token) throw new Error(`no ID token from the test provider: ${JSON.stringify(body)}`);
      return body.id_token;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
  const provider = new Provider(issuer, {
    clients: clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      redirect_uris: c.redirectUris,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    })),
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["test-openid-provider-cookie-key"] },
    pkce: { required: () => false },
    ttl: { IdToken: () => state.idTokenTtlSeconds },
    async findAccount(_ctx, id) {
      const account = state.accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: account.email, email_verified: account.emailVerified ?? true, ...(account.name ? { name: account.name } : {}) }),
      };
    },
  });
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === "/token" && state.substituteIdToken && ctx.body && typeof ctx.body === "object") {
      (ctx.body as Record<string, unknown>).id_token = state.substituteIdToken;
    }
  });
  handler = provider.callback() as never;
  return state;
}

/** Follows the provider's redirects and posts its login and consent forms until it sends the browser elsewhere. */
async function drive(issuer: string, authUrl: string, login: string): Promise<URL> {
  const jar = new CookieJar();
  let url = authUrl;
  let form: { body: URLSearchParams } | null = null;
  for (let step = 0; step < 20; step++) {
    const res: Response = await fetch(url, {
      method: form ? "POST" : "GET",
      redirect: "manual",
      headers: { cookie: jar.header(), ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      body: form?.body,
    });
    jar.store(res);
    form = null;
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get("location")!, url);
      await res.arrayBuffer();
      if (next.origin !== issuer) return next;
      url = next.href;
      continue;
    }
    const html: string = await res.text();
    if (res.status !== 200) throw new Error(`the test provider answered ${res.status}: ${html.slice(0, 500)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt: string | undefined = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no login or consent form in the test provider's page: ${html.slice(0, 500)}`);
    url = new URL(action, url).href;
    form = { body: new URLSearchParams(prompt === "login" ? { prompt, login, password: "any" } : { prompt }) };
  }
  throw new Error("the test provider did not redirect back within 20 steps");
}
