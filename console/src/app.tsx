import { useEffect, useErrorBoundary, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { api, whenSessionLost, type Session } from "./api";
import { ErrorMessage, Link, Loading } from "./components";
import { afterSignIn, here, navigate, useRoute } from "./router";
import { SignIn } from "./pages/sign-in";
import { Decisions } from "./pages/decisions";
import { Offers } from "./pages/offers";
import { Experiments } from "./pages/experiments";
import { Health } from "./pages/health";
import { Audit } from "./pages/audit";

const PAGES = [
  { path: "/decisions", label: "Decisions", page: Decisions },
  { path: "/offers", label: "Offers", page: Offers },
  { path: "/experiments", label: "Experiments", page: Experiments },
  { path: "/health", label: "Health", page: Health },
  { path: "/audit", label: "Audit", page: Audit, adminOnly: true },
];

/** What a page is given: who is signed in, and whether they may write (viewers may not). */
export interface PageProps {
  session: Session;
  canWrite: boolean;
}

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    // An expired or ended session anywhere sends the person to sign-in, keeping their place.
    whenSessionLost(() => {
      setSession(null);
      if (!location.pathname.endsWith("/sign-in")) navigate(`/sign-in?next=${encodeURIComponent(here())}`, true);
    });
    api<Session>("GET", "/api/auth/session")
      .then(setSession)
      .catch((err) => {
        if (err.status === 401) return;
        setError(err);
        setSession(null);
      });
  }, []);

  const mustSignIn = session === null && route.path !== "/sign-in";
  useEffect(() => {
    if (mustSignIn) navigate(`/sign-in?next=${encodeURIComponent(here())}`, true);
  }, [mustSignIn]);

  if ((session === undefined && !error) || mustSignIn) return <Loading />;

  if (!session || route.path === "/sign-in") {
    return (
      <main id="main" class="sign-in-page">
        <ErrorMessage error={error} />
        <SignIn
          next={route.query.get("next")}
          onSignedIn={(s) => {
            setSession(s);
            navigate(afterSignIn(route.query.get("next")), true);
          }}
        />
      </main>
    );
  }

  const signOut = async () => {
    try {
      await api("POST", "/api/auth/sign-out");
    } finally {
      setSession(null);
      navigate("/sign-in", true);
    }
  };

  const pages = PAGES.filter((p) => !p.adminOnly || session.role === "admin");
  const active = pages.find((p) => route.path === p.path || route.path.startsWith(`${p.path}/`)) ?? pages[0];
  const Page = active.page;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Decisioning console</span>
        <nav aria-label="Console pages">
          <ul>
            {pages.map((p) => (
              <li key={p.path}>
                <Link to={p.path} aria-current={p === active ? "page" : undefined}>
                  {p.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who" aria-label="Signed in as">
          <span data-testid="tenant">{session.tenant.name}</span>
          <span class={`role role-${session.role}`} data-testid="role">
            {session.role}
          </span>
          <span class="muted">{session.user.email}</span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <PageBoundary key={active.path}>
          <Page session={session} canWrite={session.role !== "viewer"} />
        </PageBoundary>
      </main>
    </>
  );
}

/** A page that fails while drawing shows a message, never a blank page or a stack trace. */
function PageBoundary(props: { children: ComponentChildren }) {
  const [error, reset] = useErrorBoundary();
  if (!error) return <>{props.children}</>;
  return (
    <div>
      <ErrorMessage error={error} />
      <button type="button" onClick={reset}>
        Try again
      </button>
    </div>
  );
}
