import type { OutboundConfig } from "../config.js";
import { guardedRequestOnce, postOptions } from "../notifications/guarded-post.js";

/** Discovery documents, key sets, token and userinfo answers are small; a larger answer is cut and fails to parse. */
const MAX_ANSWER_BYTES = 1024 * 1024;

type FetchLike = (url: string, init: { method: string; headers: Record<string, string>; body?: unknown }) => Promise<Response>;

/**
 * The fetch the OpenID client uses (openid-client's `customFetch`): every request to an identity
 * provider goes through the outbound SSRF guard (docs/notifications.md), so a tenant's issuer URL
 * cannot reach the service's own network, and plain http is refused unless OUTBOUND_ALLOW_PRIVATE=true.
 * Redirects are never followed (openid-client asks for `redirect: "manual"` and treats them as errors).
 */
export function guardedFetch(outbound: OutboundConfig): FetchLike {
  const options = postOptions(outbound);
  return async (url, init) => {
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    const answer = await guardedRequestOnce(new URL(url), { method: init.method, headers: init.headers, body }, options, MAX_ANSWER_BYTES);
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const noBody = answer.status === 204 || answer.status === 304;
    return new Response(noBody ? null : answer.body, { status: answer.status, headers });
  };
}
