/**
 * The console's one way to the service: the same public REST routes every client uses, with the
 * session cookie. State-changing requests send JSON and `X-Requested-With`, which the service's CSRF
 * guard requires of cookie-authenticated writes.
 */

export interface FieldError {
  field: string;
  message: string;
}

/** An answer other than 2xx, carrying what the API said (spec 7's problem shape), never a stack. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
    readonly fieldErrors: FieldError[],
  ) {
    super(message);
  }

  /** The message the API gave for one field, for showing at that field. */
  forField(field: string): string | undefined {
    return this.fieldErrors.find((e) => e.field === field)?.message;
  }
}

export interface Session {
  user: { id: string; email: string; name: string };
  tenant: { id: string; name: string };
  role: "viewer" | "editor" | "admin";
  expiresAt: string;
}

/** Called when a request finds the session gone, so the app can send the person to sign-in. */
let onSessionLost: (() => void) | undefined;
export function whenSessionLost(handler: () => void): void {
  onSessionLost = handler;
}

/** Reads the error body in whichever of spec 7's shapes it came. */
function toApiError(status: number, body: any, reasonHeader: string | null): ApiError {
  if (body && typeof body === "object") {
    if (body.error && typeof body.error === "object") {
      return new ApiError(status, String(body.error.message ?? "Request failed"), String(body.error.reason ?? reasonHeader ?? ""), []);
    }
    const message = body.detail ?? body.message ?? body.title ?? (typeof body.error === "string" ? body.error : undefined);
    const fieldErrors = Array.isArray(body.errors) ? body.errors.filter((e: any) => e && typeof e.field === "string") : [];
    if (message) return new ApiError(status, String(message), String(body.reason ?? reasonHeader ?? ""), fieldErrors);
  }
  return new ApiError(status, `The service answered ${status}`, reasonHeader ?? "", []);
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", "x-requested-with": "decisioning-console" };
  if (body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  } catch {
    throw new ApiError(0, "The service could not be reached. Check your connection and try again.", "NETWORK", []);
  }
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const err = toApiError(res.status, parsed, res.headers.get("x-error-reason"));
    if (res.status === 401 && !path.startsWith("/api/auth/sign-in")) onSessionLost?.();
    throw err;
  }
  return parsed as T;
}

/** Builds `path?a=1&b=2`, leaving out empty values. */
export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}
