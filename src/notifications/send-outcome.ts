import type { IncomingHttpHeaders } from "node:http";
import type { OutboundMessage } from "./outbound.js";

/** What a destination said when it took a message. */
export interface SendOutcome {
  messageId?: string;
  httpStatus?: number;
}

/** A failed attempt. `permanent` ones (refused address, 4xx, bad credentials) are not retried. */
export class SendError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = "SendError";
  }
}

/** Sends one message to one resolved destination; `deliveryId` is stable across retries of it. */
export type Sender = (message: OutboundMessage, deliveryId: string) => Promise<SendOutcome>;

/** 408, 425, 429 and 5xx may pass; any other 4xx will answer the same again. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/**
 * The provider's message id from an HTTP answer: an `X-Message-Id` header, else `id`, `messageId`
 * or `message_id` (or `sid`, as SMS gateways say) of a JSON body.
 */
export function messageIdOf(headers: IncomingHttpHeaders, body: string): string | undefined {
  const header = headers["x-message-id"];
  if (typeof header === "string" && header) return header.slice(0, 200);
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    for (const k of ["messageId", "message_id", "id", "sid"]) {
      if (typeof json[k] === "string" || typeof json[k] === "number") return String(json[k]).slice(0, 200);
    }
  } catch {
    /* not JSON: no id */
  }
  return undefined;
}
