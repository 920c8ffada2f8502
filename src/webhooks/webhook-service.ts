import { create } from "@bufbuild/protobuf";
import { HttpBodySchema, type HttpBody } from "../../gen/google/api/httpbody_pb.js";
import {
  ReceiveWebhookResponseSchema,
  type ReceiveWebhookResponse,
  type VerifyMessagingWebhookRequest,
} from "../../gen/decisioning/v1/webhooks_pb.js";
import type { WebhookSecrets } from "../config.js";
import type { CallInfo, TenantContext } from "../platform/context.js";
import { invalidField } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { newId } from "../platform/ids.js";
import { parseDeliveryCallback, parseMessagingCallback, type ParsedCallback, type ReportedStatus } from "./delivery-formats.js";
import type { DeliveryEventStore, KnownMessage, NewDeliveryEvent } from "./delivery-event-store.js";
import { sameSecret, verifyBodySignature, verifyTokenRefused } from "./webhook-signature.js";

/** Echoed as text: kept to characters that cannot turn the answer into markup (docs/webhooks.md). */
const CHALLENGE = /^[A-Za-z0-9._~-]{1,256}$/;

/**
 * Inbound delivery webhooks (spec 4.18). The order of checks is fixed: the signature over the raw
 * bytes first (an unsigned caller learns nothing about the body), then the whole body is parsed and
 * validated (a bad item is a 400 and nothing is stored), then the tenants are found from the message
 * ids and the events stored in one transaction. An id no tenant knows is acknowledged and logged,
 * so providers do not retry it forever.
 */
export class WebhookService {
  constructor(
    private readonly store: DeliveryEventStore,
    private readonly secrets: WebhookSecrets,
    private readonly logger: Logger,
  ) {}

  async verifyMessagingWebhook(_ctx: TenantContext, req: VerifyMessagingWebhookRequest): Promise<HttpBody> {
    const expected = this.secrets.messagingVerifyToken;
    if (!expected) throw verifyTokenRefused("Webhook verification is refused: MESSAGING_WEBHOOK_VERIFY_TOKEN is not configured");
    if (!sameSecret(expected, req.hub?.verifyToken ?? "")) throw verifyTokenRefused("hub.verify_token: does not match");
    if (req.hub?.mode !== "subscribe") throw invalidField("hub.mode", "must be subscribe");
    const challenge = req.hub.challenge;
    if (!CHALLENGE.test(challenge)) throw invalidField("hub.challenge", "must be 1 to 256 letters, digits or . _ ~ -");
    return create(HttpBodySchema, { contentType: "text/plain; charset=utf-8", data: Buffer.from(challenge) });
  }

  async receiveMessagingWebhook(_ctx: TenantContext, req: HttpBody, call: CallInfo): Promise<ReceiveWebhookResponse> {
    verifyBodySignature(this.secrets.messagingAppSecret, "MESSAGING_APP_SECRET", "x-hub-signature-256", call.header("x-hub-signature-256"), req.data);
    return this.recordReported(parseMessagingCallback(req.data));
  }

  async receiveDeliveryWebhook(_ctx: TenantContext, req: HttpBody, call: CallInfo): Promise<ReceiveWebhookResponse> {
    verifyBodySignature(this.secrets.deliverySigningSecret, "WEBHOOK_SIGNING_SECRET", "X-Webhook-Signature", call.header("x-webhook-signature"), req.data);
    return this.recordReported(parseDeliveryCallback(req.data, req.contentType, call.header("x-provider")));
  }

  private async recordReported(parsed: ParsedCallback): Promise<ReceiveWebhookResponse> {
    if (parsed.note) this.logger.info({ format: parsed.format }, `delivery webhook: ${parsed.note}`);
    const reportable = parsed.statuses.filter((s) => s.status !== null);
    const known = await this.store.findMessagesAcrossTenants([...new Set(reportable.flatMap((s) => lookupIds(s.providerMessageId)))]);
    const byId = new Map<string, KnownMessage[]>();
    for (const m of known) byId.set(m.message_id, [...(byId.get(m.message_id) ?? []), m]);
    const receivedAt = new Date();
    const events: NewDeliveryEvent[] = [];
    let unknown = 0;
    for (const s of reportable) {
      const matches = lookupIds(s.providerMessageId).map((id) => byId.get(id)).find((m) => m?.length) ?? [];
      if (!matches.length) unknown++;
      for (const m of matches) events.push(eventFor(parsed, s, m, receivedAt));
    }
    if (unknown) {
      const ids = reportable.map((s) => s.providerMessageId).filter((id) => !lookupIds(id).some((k) => byId.has(k)));
      this.logger.info({ format: parsed.format, messageIds: ids.slice(0, 20), count: unknown }, "delivery webhook: message ids no tenant knows, ignored");
    }
    const recorded = await this.store.record(events);
    return create(ReceiveWebhookResponseSchema, {
      format: parsed.format,
      received: parsed.statuses.length,
      recorded,
      duplicates: events.length - recorded,
      ignored: parsed.statuses.length - reportable.length + unknown,
    });
  }
}

/**
 * The ids a reported message id may have been stored under. E-mail API events name the message as
 * `<id returned at send>.filter…`, so the part before `.filter` is tried after the whole id.
 */
function lookupIds(providerMessageId: string): string[] {
  const cut = providerMessageId.indexOf(".filter");
  return cut > 0 ? [providerMessageId, providerMessageId.slice(0, cut)] : [providerMessageId];
}

function eventFor(parsed: ParsedCallback, s: ReportedStatus, m: KnownMessage, receivedAt: Date): NewDeliveryEvent {
  return {
    tenantId: m.tenant_id,
    id: newId(),
    providerMessageId: m.message_id,
    format: parsed.format,
    status: s.status!,
    providerStatus: s.providerStatus,
    eventRef: s.eventRef,
    deliveryId: m.delivery_id,
    interactionId: m.interaction_id,
    customerId: m.customer_id,
    occurredAt: s.occurredAt ?? receivedAt,
  };
}
