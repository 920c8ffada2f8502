import type { Sequelize } from "sequelize";
import { CustomerProfileService, CustomerValueService } from "../../gen/decisioning/v1/customers_pb.js";
import type { Logger } from "../platform/logger.js";
import type { SegmentDefinition } from "../core/index.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { ClvService } from "./clv-service.js";
import { ClvStore } from "./clv-store.js";
import type { CustomerEventHistory, CustomerJourneyHistory, DeliveryEventHistory } from "./customer-activity.js";
import { IdentityLinkStore } from "./identity-link-store.js";
import type { DecisionHistory } from "./decision-history.js";
import { ProfileService } from "./profile-service.js";

export interface CustomersOptions {
  db: Sequelize;
  logger: Logger;
  /** The decisions domain's read model: stored attributes, interaction history and its aggregates, experiment variants. */
  decisions: DecisionHistory;
  /** After CLV records changed: Recommend's customer cache drops those customers everywhere. */
  clvChanged: (tenantId: string, customerIds: readonly string[]) => Promise<void>;
  /** Optional ports whose entries join the profile's interactions (the lead wires the real ones). */
  events?: CustomerEventHistory;
  deliveries?: DeliveryEventHistory;
  journeys?: CustomerJourneyHistory;
  /** The catalog's active segments, evaluated as profile membership. */
  segments?: (tenantId: string) => Promise<SegmentDefinition[]>;
}

/** CLV (spec 4.14) and the unified profile with identity links (spec 4.15): built once at start-up. */
export function createCustomers(o: CustomersOptions) {
  const clvStore = new ClvStore(o.db);
  const clv = new ClvService({ store: clvStore, history: o.decisions, logger: o.logger, changed: o.clvChanged, events: o.events });
  const profile = new ProfileService({
    identities: new IdentityLinkStore(o.db),
    clv: clvStore,
    decisions: o.decisions,
    events: o.events,
    deliveries: o.deliveries,
    journeys: o.journeys,
    segments: o.segments,
  });
  const services: ServiceRegistration[] = [
    {
      service: CustomerValueService,
      impl: {
        getCustomerClv: (ctx, req) => clv.getCustomerClv(ctx, req),
        recomputeCustomerClv: (ctx, req) => clv.recomputeCustomerClv(ctx, req),
        computeClv: (ctx, req) => clv.computeClv(ctx, req),
      },
    },
    {
      service: CustomerProfileService,
      impl: {
        getUnifiedProfile: (ctx, req) => profile.getUnifiedProfile(ctx, req),
        listCustomerIdentities: (ctx, req) => profile.listCustomerIdentities(ctx, req),
        createCustomerIdentity: (ctx, req) => profile.createCustomerIdentity(ctx, req),
        deleteCustomerIdentity: (ctx, req) => profile.deleteCustomerIdentity(ctx, req),
      },
    },
  ];
  return {
    services,
    /** The read model Recommend's customer cache uses for the CLV tilt. */
    clvScore: (tenantId: string, customerId: string) => clvStore.score(tenantId, customerId),
  };
}
