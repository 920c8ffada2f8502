import type { CallInfo } from "../platform/context.js";
import { forbidden, type AppError } from "../platform/errors.js";
import { sessionTokenOf } from "../sessions/session-issuer.js";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Whether the request's authority would come from the session cookie: the browser attaches the
 * cookie by itself, so that authority is what a cross-site page could borrow. The Authenticator
 * takes an API key or a bearer token first, so a request carrying either is not cookie-authenticated.
 */
export function cookieAuthority(call: CallInfo): boolean {
  return !call.header("x-api-key") && !call.header("authorization") && sessionTokenOf(call.header("cookie")) !== null;
}

/**
 * Spec 5.1 rule 3, for API keys and (issue 22) for the session cookie: a state-changing request
 * must carry a content type a cross-site form cannot send, or X-Requested-With (which no form sends
 * and a cross-site script cannot add without a CORS preflight this service never grants). A
 * cookie-authenticated request the browser marks as cross-site (`Sec-Fetch-Site: cross-site`) is
 * refused outright, so a cross-site form post never carries the cookie's authority even where a
 * browser would attach a Lax cookie. `cookieCounts` is false where the cookie carries no authority
 * (public and cron methods). Null when the request may go on.
 */
export function csrfRefusal(method: string, contentType: string | undefined, call: CallInfo, cookieCounts: boolean): AppError | null {
  if (!STATE_CHANGING.has(method.toUpperCase())) return null;
  const byKey = Boolean(call.header("x-api-key"));
  const byCookie = cookieCounts && cookieAuthority(call);
  if (!byKey && !byCookie) return null;
  if (byCookie && call.header("sec-fetch-site") === "cross-site") {
    return forbidden("A cross-site request cannot act with the session cookie", "CSRF_GUARD");
  }
  if (call.header("x-requested-with") || safeContentType(contentType)) return null;
  return forbidden(
    byKey
      ? "State-changing API-key requests must send Content-Type: application/json or an X-Requested-With header"
      : "State-changing requests signed in by the session cookie must send Content-Type: application/json or an X-Requested-With header",
    "CSRF_GUARD",
  );
}

function safeContentType(contentType: string | undefined): boolean {
  const type = (contentType ?? "").split(";")[0].trim().toLowerCase();
  return (
    type === "application/json" ||
    type.endsWith("+json") ||
    type === "application/proto" ||
    type === "application/connect+proto" ||
    type.startsWith("application/grpc")
  );
}
