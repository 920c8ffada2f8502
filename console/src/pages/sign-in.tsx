import { useEffect, useState } from "preact/hooks";
import { api, withQuery, type Session } from "../api";
import { ErrorMessage } from "../components";
import { afterSignIn, BASE } from "../router";

/** GET /api/auth/providers: what this deployment and the named organization offer a signed-out person. */
interface Providers {
  password: boolean;
  identityProvider: boolean;
  sso: boolean;
}

/** The organization id is remembered on this browser, so its people find their SSO button next time. */
const ORGANIZATION_KEY = "console.organizationId";
/** Before anything is known: the password form, as every deployment has it. */
const PASSWORD_ONLY: Providers = { password: true, identityProvider: false, sso: false };

function rememberedOrganization(): string {
  try {
    return localStorage.getItem(ORGANIZATION_KEY) ?? "";
  } catch {
    return "";
  }
}

function remember(organization: string): void {
  try {
    if (organization) localStorage.setItem(ORGANIZATION_KEY, organization);
    else localStorage.removeItem(ORGANIZATION_KEY);
  } catch {
    // Storage refused (private mode, policy): the field simply starts empty next time.
  }
}

/**
 * Sign-in: the password form (POST /api/auth/sign-in sets the `ds_session` cookie), and, as
 * GET /api/auth/providers says, the organization's SSO and the deployment's identity provider. Both
 * are plain links to their start routes, which come back to the page the person wanted with the
 * same cookie (docs/console.md).
 */
export function SignIn(props: { next: string | null; onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [organization, setOrganization] = useState(rememberedOrganization);
  const [providers, setProviders] = useState<Providers>(PASSWORD_ONLY);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const tenant = organization.trim();
  useEffect(() => {
    remember(tenant);
    let current = true;
    // Typing an id asks once it rests; an answer for an id no longer in the field is dropped.
    const timer = setTimeout(() => {
      api<Providers>("GET", withQuery("/api/auth/providers", { tenant })).then(
        (p) => current && setProviders(p),
        () => current && setProviders(PASSWORD_ONLY),
      );
    }, tenant ? 300 : 0);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [tenant]);

  const returnTo = BASE + afterSignIn(props.next);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      props.onSignedIn(await api<Session>("POST", "/api/auth/sign-in", { email, password }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card sign-in" onSubmit={submit} aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to the decisioning console</h1>
      {props.next && <p class="muted">Sign in to go back to where you were.</p>}
      <ErrorMessage error={error} />
      <label for="organization">Organization ID (optional)</label>
      <input
        id="organization"
        autoComplete="organization"
        spellcheck={false}
        aria-describedby="organization-hint"
        value={organization}
        onInput={(e) => setOrganization(e.currentTarget.value)}
      />
      <p id="organization-hint" class="muted">
        Your organization's id, if it signs in through single sign-on.
      </p>
      {providers.sso && (
        <a class="button primary" id="sign-in-sso" href={withQuery("/api/auth/sso/start", { tenant, returnTo })}>
          Sign in with SSO
        </a>
      )}
      {providers.identityProvider && (
        <a class="button" id="sign-in-identity-provider" href={withQuery("/api/auth/signin/oidc", { returnTo })}>
          Sign in with the identity provider
        </a>
      )}
      {providers.password && (
        <>
          <label for="email">E-mail address</label>
          <input id="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          <label for="password">Password</label>
          <input id="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </>
      )}
    </form>
  );
}
