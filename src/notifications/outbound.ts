/**
 * The one way out for every outbound message (alerts now, reports and triggers later): the shapes a
 * domain hands the dispatcher, and what it gets back. The dispatcher resolves destinations to the
 * tenant's notification providers, signs webhooks, guards against SSRF, retries with backoff and
 * records every attempt.
 */

/** Spec 2.8 `channels`: a provider id, `{providerId}`, or a legacy `{type, target}`. */
export type Destination = { providerId: string } | { type: "webhook" | "email"; target: string };

export interface OutboundMessage {
  /** What sends it, e.g. `alert`, `report`, `trigger`: recorded with each attempt. */
  kind: string;
  /**
   * Identifies this message across retries of the caller's own job (e.g. `alert:<ruleId>:<slot>`):
   * a destination that already accepted a message with this key is not sent it again.
   */
  dedupeKey: string;
  subject: string;
  text: string;
  /** The JSON body of webhook deliveries (and of SMS/push providers that take JSON). */
  payload: Record<string, unknown>;
  /** Files attached to e-mail deliveries (reports' artifacts); other channels carry what `payload` says of them. */
  attachments?: readonly OutboundAttachment[];
  /**
   * The message carries a credential (a sign-in link): it is never stored, so a delivery whose
   * process died is not sent again by another, and its reader asks for a new one.
   */
  holdsCredential?: boolean;
  /** The customer whose data the message carries (a trigger's event): a GDPR erasure of them deletes it while it waits. */
  customerId?: string;
}

export interface OutboundAttachment {
  fileName: string;
  contentType: string;
  content: Uint8Array;
}

export interface DeliveryResult {
  destination: Destination;
  /** The destination accepted the message (on this call or an earlier one with the same dedupeKey). */
  accepted: boolean;
  attempts: number;
  /** The provider's message id, when it gave one. */
  messageId?: string;
  /** Why the last attempt failed, stated without secrets. */
  error?: string;
}

export interface Dispatcher {
  /** Sends to every destination; resolves when each was accepted or ran out of attempts. Never throws for a failed delivery. */
  dispatch(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<DeliveryResult[]>;
  /**
   * The same, in two steps: resolves once the message and its deliveries are stored (the outbox),
   * so that a caller may answer only then and a crash after its answer loses nothing; `sent`
   * resolves as `dispatch` does.
   */
  enqueue(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<{ sent: Promise<DeliveryResult[]> }>;
  /**
   * Called when the redelivery sweep ends a delivery of a message of this kind that its first
   * process could not (it died, or handed the delivery over at a stop): the sender's domain brings
   * its own record of the delivery up to date (a report run's delivery results).
   */
  onRedelivered(kind: string, handler: RedeliveryHandler): void;
}

export type RedeliveryHandler = (tenantId: string, dedupeKey: string, result: DeliveryResult) => Promise<void>;
