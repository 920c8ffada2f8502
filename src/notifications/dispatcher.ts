import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { OutboundConfig } from "../config.js";
import { isAppError } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { SettingCategory } from "../platform-settings/platform-settings-store.js";
import type { DeliveryStore } from "./delivery-store.js";
import { sendEmail, smtpSettings } from "./email-sender.js";
import { genericWebhookProvider, platformMessagingSettings, type MessagingChannel } from "./http-messaging-provider.js";
import type { DeliveryResult, Destination, Dispatcher, OutboundMessage } from "./outbound.js";
import { openProviderSecrets } from "./provider-secrets.js";
import type { ProviderRow, ProviderStore } from "./provider-store.js";
import { SendError, type Sender } from "./send-outcome.js";
import { postDelivery } from "./webhook-sender.js";

export interface DispatcherDeps {
  deliveries: DeliveryStore;
  providers: ProviderStore;
  cipher: SettingsCipher;
  /** The platform's plaintext settings of a category, reloaded when they change. */
  platformSettings: (category: SettingCategory) => Promise<Record<string, string>>;
  outbound: OutboundConfig;
  logger: Logger;
}

const MAX_ERROR = 500;

/** Backoff before attempt `n + 1`: base × 2^(n-1), capped. */
export function backoffMs(outbound: OutboundConfig, attemptsMade: number): number {
  return Math.min(outbound.backoffMaxMs, outbound.backoffMs * 2 ** (attemptsMade - 1));
}

/** The unique-index key of a destination: a provider by id, a legacy target by its type and address. */
function destinationKey(d: Destination): string {
  const raw = "providerId" in d ? `provider:${d.providerId}` : `${d.type}:${d.target}`;
  return raw.length <= 200 ? raw : `sha256:${createHash("sha256").update(raw).digest("hex")}`;
}

/**
 * The one way out for every outbound message (src/notifications/outbound.ts). Per destination: a
 * delivery row claimed under the (message, destination) unique index, so a destination that
 * accepted a message is never sent it again and two dispatchers never send one row at once; then
 * attempts with exponential backoff, each recorded, until one is accepted, one fails permanently,
 * or `maxAttempts` ran out.
 */
export class OutboundDispatcher implements Dispatcher {
  constructor(private readonly deps: DispatcherDeps) {}

  /** A destination listed twice is sent once; each listing gets its result. */
  dispatch(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<DeliveryResult[]> {
    const once = new Map<string, Promise<DeliveryResult>>();
    return Promise.all(
      destinations.map((d) => {
        const key = destinationKey(d);
        if (!once.has(key)) once.set(key, this.deliver(tenantId, d, message));
        return once.get(key)!.then((r) => ({ ...r, destination: d }));
      }),
    );
  }

  private async deliver(tenantId: string, destination: Destination, message: OutboundMessage): Promise<DeliveryResult> {
    const { deliveries, outbound, logger } = this.deps;
    // Long enough for every attempt, its timeout and backoff, so the lease outlives a live sender.
    const leaseMs = outbound.maxAttempts * (outbound.timeoutMs + outbound.backoffMaxMs) + 30_000;
    const { row, claimed } = await deliveries.claim(
      tenantId,
      { id: newId(), kind: message.kind, dedupeKey: message.dedupeKey, destinationKey: destinationKey(destination), destination },
      leaseMs,
    );
    if (!claimed) {
      if (row.status === "accepted") return { destination, accepted: true, attempts: row.attempts, messageId: row.provider_message_id ?? undefined };
      return { destination, accepted: false, attempts: row.attempts, error: "another dispatch of this message to this destination is in progress" };
    }
    let attempt = row.attempts;
    let sender: Sender | null = null;
    for (let tries = 1; ; tries++) {
      attempt++;
      const startedAt = new Date();
      try {
        sender ??= await this.resolve(tenantId, destination);
        const outcome = await sender(message, row.id);
        await deliveries.recordAttempt(tenantId, {
          delivery_id: row.id,
          attempt,
          status: "accepted",
          provider_message_id: outcome.messageId ?? null,
          http_status: outcome.httpStatus ?? null,
          error: null,
          started_at: startedAt,
        });
        await deliveries.finish(tenantId, row.id, "accepted", outcome.messageId ?? null, null);
        return { destination, accepted: true, attempts: attempt, messageId: outcome.messageId };
      } catch (err) {
        const failure = asSendError(err);
        if (!(err instanceof SendError)) logger.warn({ err, tenantId, deliveryId: row.id }, "outbound delivery attempt failed unexpectedly");
        await deliveries.recordAttempt(tenantId, {
          delivery_id: row.id,
          attempt,
          status: "failed",
          provider_message_id: null,
          http_status: failure.httpStatus ?? null,
          error: failure.message.slice(0, MAX_ERROR),
          started_at: startedAt,
        });
        if (failure.permanent || tries >= outbound.maxAttempts) {
          await deliveries.finish(tenantId, row.id, "failed", null, failure.message.slice(0, MAX_ERROR));
          logger.info({ tenantId, deliveryId: row.id, kind: message.kind, attempts: attempt, error: failure.message }, "outbound delivery failed");
          return { destination, accepted: false, attempts: attempt, error: failure.message.slice(0, MAX_ERROR) };
        }
        await sleep(backoffMs(outbound, tries));
      }
    }
  }

  /** The sender of a destination; what cannot be resolved (unknown provider, no settings) fails permanently. */
  private async resolve(tenantId: string, d: Destination): Promise<Sender> {
    const { outbound, platformSettings } = this.deps;
    if (!("providerId" in d)) {
      if (d.type === "webhook") return (m, id) => postDelivery({ url: d.target, body: JSON.stringify(m.payload), deliveryId: id, kind: m.kind }, outbound);
      if (d.type === "email") return async (m, id) => sendEmail(smtpSettings({}, await platformSettings("email")), [d.target], m, id, outbound);
      throw new SendError(`unknown destination type ${JSON.stringify((d as { type?: unknown }).type)}`, true);
    }
    const row = isUuid(d.providerId) ? await this.deps.providers.find(tenantId, d.providerId) : null;
    if (!row) throw new SendError(`notification provider ${d.providerId} not found`, true);
    const config = { ...row.config, ...openProviderSecrets(this.deps.cipher, row) };
    return this.providerSender(row, config);
  }

  private providerSender(row: ProviderRow, config: Record<string, unknown>): Sender {
    const { outbound, platformSettings } = this.deps;
    switch (row.type) {
      case "webhook":
        return (m, id) =>
          postDelivery(
            { url: config.url as string, body: JSON.stringify(m.payload), signingSecret: config.secret as string, headers: config.headers as Record<string, string> | undefined, deliveryId: id, kind: m.kind },
            outbound,
          );
      case "email":
        return async (m, id) => sendEmail(smtpSettings(config, await platformSettings("email")), config.to as string[], m, id, outbound);
      case "sms":
      case "push": {
        const channel: MessagingChannel = row.type;
        return async (m, id) => {
          const own = config.url ? { url: config.url as string, authToken: config.authToken as string | undefined } : platformMessagingSettings(channel, await platformSettings(channel));
          const provider = genericWebhookProvider(channel, { ...own, secret: config.secret as string | undefined, to: (config.to as string[] | undefined) ?? [] }, outbound);
          return provider.send(m, id);
        };
      }
    }
  }
}

/** Our own errors (a missing encryption key, say) fail the delivery for good; anything else may pass. */
function asSendError(err: unknown): SendError {
  if (err instanceof SendError) return err;
  if (isAppError(err)) return new SendError(err.message, true);
  return new SendError(err instanceof Error ? err.message : String(err), false);
}
