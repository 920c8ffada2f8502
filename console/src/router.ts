import { useEffect, useState } from "preact/hooks";

/** Pages live under /console/; the service answers every page path with index.html. */
export const BASE = "/console";

export interface Route {
  path: string;
  query: URLSearchParams;
}

function current(): Route {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || "/" : "/";
  return { path, query: new URLSearchParams(location.search) };
}

export function navigate(to: string, replace = false): void {
  const url = BASE + to;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** A `next` to go back to after sign-in: a page inside the console (not the sign-in page), else the decisions. */
export function afterSignIn(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/sign-in") ? next : "/decisions";
}

/** The place in the console, as `/path?query`, for coming back after sign-in. */
export function here(): string {
  const r = current();
  const qs = r.query.toString();
  return r.path + (qs ? `?${qs}` : "");
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return route;
}

/** A link that routes inside the app; a modified click still opens a new tab. */
export function onLink(e: MouseEvent, to: string): void {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(to);
}
