import type { Sequelize } from "sequelize";
import { WebhookService as WebhookServiceDesc } from "../../gen/decisioning/v1/webhooks_pb.js";
import type { WebhookSecrets } from "../config.js";
import type { DeliveryEventHistory } from "../customers/customer-activity.js";
import type { Logger } from "../platform/logger.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { DeliveryEventStore } from "./delivery-event-store.js";
import { WebhookService } from "./webhook-service.js";

export interface WebhooksOptions {
  db: Sequelize;
  secrets: WebhookSecrets;
  logger: Logger;
}

export interface Webhooks {
  services: ServiceRegistration[];
  /** What the unified profile reads (src/customers/customer-activity.ts). */
  deliveryEvents: DeliveryEventHistory;
}

/** Inbound delivery webhooks (spec 4.18) and the delivery-event history they feed. */
export function createWebhooks(o: WebhooksOptions): Webhooks {
  const store = new DeliveryEventStore(o.db);
  const service = new WebhookService(store, o.secrets, o.logger);
  return {
    services: [{ service: WebhookServiceDesc, impl: service as never }],
    deliveryEvents: { recent: (tenantId, customerId, limit) => store.recentForCustomer(tenantId, customerId, limit) },
  };
}
