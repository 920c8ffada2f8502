import { createHmac } from "node:crypto";
import type { OutboundConfig } from "../config.js";
import { guardedPost, postOptions, PostFailure } from "./guarded-post.js";
import { messageIdOf, retryableStatus, SendError, type SendOutcome } from "./send-outcome.js";

/**
 * `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">` under the provider's
 * secret, with the same timestamp (Unix seconds) in `X-Webhook-Timestamp`: the receiver recomputes
 * it over the bytes it got and rejects old timestamps, so a captured delivery cannot be replayed
 * later (docs/notifications.md).
 */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

export interface HttpDelivery {
  url: string;
  body: string;
  /** Signs the body when set. */
  signingSecret?: string;
  /** Sent as `Authorization: Bearer`, only to the URL's own origin. */
  bearerToken?: string;
  headers?: Record<string, string>;
  deliveryId: string;
  kind: string;
}

/**
 * One signed JSON POST through the SSRF guard. `X-Webhook-Id` is the delivery's id, the same on
 * every retry, so a receiver can drop a retry of a delivery it already took.
 */
export async function postDelivery(d: HttpDelivery, outbound: OutboundConfig): Promise<SendOutcome> {
  const timestamp = Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    ...d.headers,
    "content-type": "application/json",
    "user-agent": "decisioning-service-notifications/1",
    "x-webhook-id": d.deliveryId,
    "x-webhook-kind": d.kind,
    "x-webhook-timestamp": String(timestamp),
  };
  if (d.signingSecret) headers["x-webhook-signature"] = webhookSignature(d.signingSecret, timestamp, d.body);
  if (d.bearerToken) headers.authorization = `Bearer ${d.bearerToken}`;
  let answer;
  try {
    answer = await guardedPost(d.url, d.body, headers, postOptions(outbound));
  } catch (err) {
    if (err instanceof PostFailure) throw new SendError(err.message, err.permanent);
    throw err;
  }
  if (answer.status >= 200 && answer.status < 300) return { httpStatus: answer.status, messageId: messageIdOf(answer.headers, answer.body) };
  throw new SendError(`answered HTTP ${answer.status}`, !retryableStatus(answer.status), answer.status);
}
