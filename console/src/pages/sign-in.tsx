import { useState } from "preact/hooks";
import { api, type Session } from "../api";
import { ErrorMessage } from "../components";

/**
 * Password sign-in (POST /api/auth/sign-in sets the `ds_session` cookie). Tenant SSO is not offered
 * here: whether a tenant has SSO is only readable by its admins (GET /api/v1/sso), so a signed-out
 * page cannot tell; see docs/console.md.
 */
export function SignIn(props: { next: string | null; onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

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
      <label for="email">E-mail address</label>
      <input id="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      <label for="password">Password</label>
      <input id="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
