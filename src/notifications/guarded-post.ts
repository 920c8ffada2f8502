import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import type { OutboundConfig } from "../config.js";
import { assertHostAllowed, forbiddenAddresses, guardedLookup, type ForbiddenAddress } from "./outbound-guard.js";

export interface PostOptions {
  /** Plain http is for closed networks and tests only; it comes with OUTBOUND_ALLOW_PRIVATE=true. */
  allowHttp: boolean;
  forbidden: ForbiddenAddress;
  timeoutMs: number;
}

export function postOptions(outbound: OutboundConfig): PostOptions {
  return { allowHttp: outbound.allowPrivate, forbidden: forbiddenAddresses(outbound.allowPrivate), timeoutMs: outbound.timeoutMs };
}

export interface PostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The first {@link MAX_ANSWER_BYTES} of the body: enough for a message id, never a whole page. */
  body: string;
}

/** A failure before any answer (refused, timed out, blocked): retryable unless `permanent`. */
export class PostFailure extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = "PostFailure";
  }
}

const MAX_REDIRECTS = 3;
const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * POSTs a body through the SSRF guard. Redirects are followed by hand, at most three, and only 307
 * and 308, which keep the method and body (a 301/302/303 would turn a delivery into a GET); each hop
 * is checked like the first, and Authorization is not carried to another origin.
 */
export async function guardedPost(url: string, body: string, headers: Record<string, string>, options: PostOptions): Promise<PostAnswer> {
  let target = new URL(url);
  let sendHeaders = headers;
  for (let hop = 0; ; hop++) {
    const answer = await postOnce(target, body, sendHeaders, options);
    if (answer.status !== 307 && answer.status !== 308) {
      if (answer.status >= 300 && answer.status < 400) throw new PostFailure(`answered ${answer.status}: redirects other than 307/308 are not followed`, true);
      return answer;
    }
    const location = answer.headers.location;
    if (!location) throw new PostFailure(`answered ${answer.status} without a Location`, true);
    if (hop + 1 > MAX_REDIRECTS) throw new PostFailure(`more than ${MAX_REDIRECTS} redirects`, true);
    const next = new URL(location, target);
    if (next.origin !== target.origin) {
      sendHeaders = Object.fromEntries(Object.entries(sendHeaders).filter(([k]) => k.toLowerCase() !== "authorization"));
    }
    target = next;
  }
}

function postOnce(url: URL, body: string, headers: Record<string, string>, options: PostOptions): Promise<PostAnswer> {
  return guardedRequestOnce(url, { method: "POST", body, headers }, options, MAX_ANSWER_BYTES);
}

/**
 * One request through the SSRF guard, no redirect followed: https only (http too with
 * OUTBOUND_ALLOW_PRIVATE=true), the host checked as a literal and on every address DNS answers, a
 * fresh connection each time. The answer body is cut at `maxAnswerBytes`. Shared by deliveries
 * and the OpenID client (src/sso/guarded-fetch.ts).
 */
export function guardedRequestOnce(
  url: URL,
  request: { method: string; body?: string; headers: Record<string, string> },
  options: PostOptions,
  maxAnswerBytes: number,
): Promise<PostAnswer> {
  if (url.protocol !== "https:" && !(url.protocol === "http:" && options.allowHttp)) {
    return Promise.reject(new PostFailure(`${url.protocol} URLs are not allowed: use https`, true));
  }
  try {
    assertHostAllowed(url.hostname, options.forbidden);
  } catch (err) {
    return Promise.reject(new PostFailure((err as Error).message, true));
  }
  const { body } = request;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: request.method,
        headers: body === undefined ? request.headers : { ...request.headers, "content-length": String(Buffer.byteLength(body)) },
        lookup: guardedLookup(options.forbidden),
        // No pooled sockets: each request connects, and so resolves and is checked, afresh.
        agent: false,
        timeout: options.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < maxAnswerBytes) chunks.push(c);
          size += c.length;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8").slice(0, maxAnswerBytes) }));
        res.on("error", (err) => reject(new PostFailure(`answer broken off: ${err.message}`, false)));
      },
    );
    req.setTimeout(options.timeoutMs, () => req.destroy(new PostFailure(`no answer within ${options.timeoutMs} ms`, false)));
    req.on("error", (err: Error & { code?: string }) => {
      if (err instanceof PostFailure) return reject(err);
      const blocked = err.code === "EOUTBOUNDBLOCKED";
      reject(new PostFailure(blocked ? err.message : `${url.host}: ${err.code ?? err.message}`, blocked));
    });
    req.end(body);
  });
}
