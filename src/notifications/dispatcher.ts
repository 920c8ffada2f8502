import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { OutboundConfig } from "../config.js";
import { isAppError } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { SettingCategory } from "../platform-settings/platform-settings-store.js";
import { DeliveryLeases } from "./delivery-leases.js";
import type { DeliveryRow, DeliveryStore } from "./delivery-store.js";
import { sendEmail, smtpSettings } from "./email-sender.js";
import { genericWebhookProvider, platformMessagingSettings, type MessagingChannel } from "./http-messaging-provider.js";
import type { DeliveryResult, Destination, Dispatcher, OutboundMessage, RedeliveryHandler } from "./outbound.js";
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
/** Why the sweep fails a delivery it cannot send: its message was never stored. */
const NOT_KEPT = "the process sending it stopped, and the message was not kept for another to send (it held a credential, or was sent before the outbox existed)";

/** What a delivery cut short by a graceful stop answers; its row stays unfinished for the sweep. */
const HANDED_OVER = "the service stopped before this delivery ended; another process sends it (redelivery)";

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
 * How long a delivery row stays leased to the process sending it. The lease is renewed every third
 * of it while the process lives (DeliveryLeases), so it only bounds how soon another process takes
 * over the rows of one that died: three attempt timeouts.
 */
export function deliveryLeaseMs(outbound: OutboundConfig): number {
  return 3 * outbound.timeoutMs;
}

/**
 * The one way out for every outbound message (src/notifications/outbound.ts). The message and a
 * delivery row per destination are stored first (the outbox); then per destination, the row is
 * claimed under the (message, destination) unique index, so a destination that accepted a message
 * is never sent it again and two dispatchers never send one row at once, and attempts with
 * exponential backoff follow, each recorded, until one is accepted, one fails permanently, or
 * `maxAttempts` ran out. A row whose process died is sent by `redeliverOrphaned` (the sweep).
 */
export class OutboundDispatcher implements Dispatcher {
  private readonly leases: DeliveryLeases;
  /** Aborted by `close()`: a delivery waiting to retry hands its row to the outbox at once. */
  private readonly stopping = new AbortController();
  private readonly redelivered = new Map<string, RedeliveryHandler>();

  constructor(private readonly deps: DispatcherDeps) {
    this.leases = new DeliveryLeases(deps.deliveries, deliveryLeaseMs(deps.outbound), deps.logger);
  }

  /** A destination listed twice is sent once; each listing gets its result. */
  async dispatch(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<DeliveryResult[]> {
    return (await this.enqueue(tenantId, destinations, message)).sent;
  }

  async enqueue(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<{ sent: Promise<DeliveryResult[]> }> {
    const distinct = new Map<string, Destination>();
    for (const d of destinations) if (!distinct.has(destinationKey(d))) distinct.set(destinationKey(d), d);
    const leaseMs = deliveryLeaseMs(this.deps.outbound);
    await this.deps.deliveries.prepare(tenantId, message, [...distinct].map(([key, destination]) => ({ id: newId(), destinationKey: key, destination })), leaseMs);
    const sending = new Map([...distinct].map(([key, d]) => [key, this.deliver(tenantId, key, d, message, leaseMs)]));
    return { sent: Promise.all(destinations.map((d) => sending.get(destinationKey(d))!.then((r) => ({ ...r, destination: d })))) };
  }

  /**
   * The sweep (docs/notifications.md, "Redelivery"): takes over up to `limit` unfinished deliveries
   * whose lease ran out and sends each with the attempts its series had left (at least one, since
   * the attempt its process died in was not recorded). A row whose message was not kept fails.
   * Resolves with how many it took.
   */
  async redeliverOrphaned(limit: number): Promise<number> {
    const { deliveries, outbound, logger } = this.deps;
    if (this.stopping.signal.aborted) return 0;
    const orphans = await deliveries.claimOrphaned(limit, deliveryLeaseMs(outbound));
    await Promise.all(
      orphans.map(async ({ row, message }) => {
        logger.info({ tenantId: row.tenant_id, deliveryId: row.id, kind: row.kind, attempts: row.attempts, kept: message !== null }, "outbound delivery taken over");
        if (!message) {
          await deliveries.finish(row.tenant_id, row.id, "failed", null, NOT_KEPT);
          return;
        }
        const result = await this.send(row, row.destination, message, Math.max(1, outbound.maxAttempts - row.attempts));
        if (result.error === HANDED_OVER) return; // stopped again: the next sweep ends it
        await this.redelivered
          .get(row.kind)?.(row.tenant_id, row.dedupe_key, result)
          .catch((err) => logger.warn({ err, tenantId: row.tenant_id, deliveryId: row.id, kind: row.kind }, "redelivery not recorded by its sender's domain"));
      }),
    );
    return orphans.length;
  }

  onRedelivered(kind: string, handler: RedeliveryHandler): void {
    this.redelivered.set(kind, handler);
  }

  /**
   * A graceful stop, first of all: a delivery waiting to retry (or not started yet) ends its call
   * at once, not delivered and handed over, so that no caller waits on a backoff while the servers
   * drain; an attempt under way still ends by itself. Leases stop being renewed, so another process,
   * or the next start, takes the rows over once they run out.
   */
  close(): void {
    this.stopping.abort();
    this.leases.close();
  }

  private async deliver(tenantId: string, key: string, destination: Destination, message: OutboundMessage, leaseMs: number): Promise<DeliveryResult> {
    const { row, claimed } = await this.deps.deliveries.claim(tenantId, message.dedupeKey, key, leaseMs);
    if (!claimed) {
      if (row.status === "accepted") return { destination, accepted: true, attempts: row.attempts, messageId: row.provider_message_id ?? undefined };
      return { destination, accepted: false, attempts: row.attempts, error: "another dispatch of this message to this destination is in progress" };
    }
    return this.send(row, destination, message, this.deps.outbound.maxAttempts);
  }

  /** Attempts on a claimed row, at most `tries` of them, each recorded, its lease renewed meanwhile. */
  private async send(row: DeliveryRow, destination: Destination, message: OutboundMessage, tries: number): Promise<DeliveryResult> {
    const { deliveries, outbound, logger } = this.deps;
    const tenantId = row.tenant_id;
    const release = this.leases.hold(tenantId, row.id);
    try {
      let attempt = row.attempts;
      let sender: Sender | null = null;
      const { signal } = this.stopping;
      for (let tried = 1; ; tried++) {
        if (signal.aborted) return { destination, accepted: false, attempts: attempt, error: HANDED_OVER };
        if (tried > 1) {
          // Ended meanwhile by someone else (a GDPR erasure withdrew the message): not ours to send any more.
          const now = await deliveries.state(tenantId, row.id);
          if (now?.status !== "sending") return { destination, accepted: false, attempts: attempt, error: now?.last_error ?? "the delivery was deleted" };
        }
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
          if (failure.permanent || tried >= tries) {
            await deliveries.finish(tenantId, row.id, "failed", null, failure.message.slice(0, MAX_ERROR));
            logger.info({ tenantId, deliveryId: row.id, kind: message.kind, attempts: attempt, error: failure.message }, "outbound delivery failed");
            return { destination, accepted: false, attempts: attempt, error: failure.message.slice(0, MAX_ERROR) };
          }
          await sleep(backoffMs(outbound, tried), undefined, { signal }).catch(() => undefined);
        }
      }
    } finally {
      release();
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
