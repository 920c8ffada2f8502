/**
 * What the customer-data domains read of each other: the events a customer sent (events domain) and
 * the delivery feedback providers reported about messages to them (inbound webhooks). The unified
 * profile and CLV consume these ports; the domains that own the tables implement them, and
 * `src/main.ts` connects the two, so no domain reads another's tables.
 */

/** An accepted inbound event (spec 2.14, 4.17). */
export interface CustomerEventView {
  id: string;
  eventType: string;
  properties: Record<string, unknown>;
  /** When it happened (the event's timestamp, else when it was received). */
  occurredAt: Date;
}

export interface CustomerEventHistory {
  /** The customer's most recent events, newest first. */
  recent(tenantId: string, customerId: string, limit: number): Promise<CustomerEventView[]>;
  /** First and last event of each customer that has any (epoch ms), for CLV's recency and tenure. */
  activitySpans(tenantId: string, customerIds: readonly string[]): Promise<Map<string, { firstAt: number; lastAt: number }>>;
  /** The next `limit` distinct ids of customers with events after `after`, in the database's id order: CLV's bulk run. */
  customerIdsAfter(tenantId: string, after: string, limit: number): Promise<string[]>;
}

export type DeliveryStatus = "delivered" | "bounced" | "opened" | "clicked" | "failed";

/** A provider's report about one message (spec 4.18), attached to the message or interaction it names. */
export interface DeliveryEventView {
  providerMessageId: string;
  status: DeliveryStatus;
  /** The provider format it came in, e.g. `messaging`, `sendgrid`, `twilio`, `generic`. */
  provider: string;
  occurredAt: Date;
}

export interface DeliveryEventHistory {
  /** Delivery events about messages sent to, or interactions recorded for, the customer; newest first. */
  recent(tenantId: string, customerId: string, limit: number): Promise<DeliveryEventView[]>;
}

/** A customer's enrollment in a journey (spec 4.15 `journeys`). */
export interface JourneyEnrollmentView {
  journeyId: string;
  status: "active" | "completed" | "exited";
  enrolledAt: Date;
}

export interface CustomerJourneyHistory {
  /** The customer's journey enrollments, newest first. */
  enrollments(tenantId: string, customerId: string, limit: number): Promise<JourneyEnrollmentView[]>;
}
