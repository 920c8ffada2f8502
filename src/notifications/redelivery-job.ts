import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { DeliveryStore } from "./delivery-store.js";
import type { OutboundDispatcher } from "./dispatcher.js";

/** Deliveries one sweep takes over at most; the next minute's sweep takes the rest. */
export const REDELIVERY_BATCH = 50;

/**
 * The outbox's sweep (docs/notifications.md, "Redelivery"), every minute across tenants: sends
 * the deliveries whose process died before they ended, then deletes stored messages that none of
 * their deliveries waits for any more.
 */
export function redeliveryJob(dispatcher: OutboundDispatcher, deliveries: DeliveryStore, logger: Logger): ScheduledJob {
  return {
    name: "outbound-redelivery",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    route: "tick",
    async run() {
      const takenOver = await dispatcher.redeliverOrphaned(REDELIVERY_BATCH);
      const messagesDeleted = await deliveries.deleteEndedMessages();
      if (takenOver || messagesDeleted) logger.info({ takenOver, messagesDeleted }, "outbound redelivery sweep");
    },
  };
}
