import { matchCondition } from "../core/index.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import type { DefinitionStore } from "./definition-store.js";
import type { EventRecord } from "./event-store.js";
import type { TriggerRow } from "./events-mapper.js";
import type { JourneyRunner } from "./journey-runner.js";

/**
 * The condition language's bag for an event: `properties.<key>` and `event.type | customerId |
 * sessionId | timestamp`, and a bare `<key>` reads a property (docs/events.md).
 */
function eventBag(event: EventRecord) {
  const meta = { type: event.eventType, customerId: event.customerId, sessionId: event.sessionId, timestamp: event.occurredAt.toISOString() };
  return { customer: {}, context: { ...event.properties, properties: event.properties, event: meta } };
}

/**
 * Evaluates an event against the tenant's active trigger rules and fires the matching rules'
 * actions. Journey enrolment runs in the request; a webhook is stored in the outbox in the request
 * (so an event answered 202 has its webhooks stored, whatever happens to the process after) and sent
 * in the background (its retries take up to minutes), deduplicated per rule and event, awaited on close.
 */
export class TriggerEvaluator {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly rules: DefinitionStore<TriggerRow>,
    private readonly journeys: JourneyRunner,
    private readonly dispatcher: Dispatcher,
    private readonly logger: Logger,
  ) {}

  /** The active rules for these event types, loaded once per batch. */
  activeRules(tenantId: string, eventTypes: readonly string[]): Promise<TriggerRow[]> {
    return this.rules.active(tenantId, "event_type = ANY($2::text[])", [[...new Set(eventTypes)]]);
  }

  /**
   * How many rules matched (event type, and a condition that holds: one over a missing property
   * does not, so a rule never fires on data the event lacks). Throws when an action could not run.
   */
  async evaluate(ctx: TenantContext, event: EventRecord, rules: readonly TriggerRow[], now: number): Promise<number> {
    // Exits first: an event that ends a journey and matches the rule enrolling into it starts a new enrollment.
    if (event.customerId) await this.journeys.exitOn(ctx, event.customerId, event.eventType, event.id);
    const bag = eventBag(event);
    const matched = rules.filter((r) => r.event_type === event.eventType && matchCondition(r.conditions, bag, now).value === true);
    for (const rule of matched) await this.fire(ctx, rule, event);
    return matched.length;
  }

  /** Resolves when every webhook handed to the dispatcher so far has settled (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private async fire(ctx: TenantContext, rule: TriggerRow, event: EventRecord): Promise<void> {
    const action = rule.action;
    if (action.type === "journey") {
      if (!event.customerId) return; // nobody to enrol; the rule still matched
      await this.journeys.enrol(ctx, action.journeyId, event.customerId, { triggerId: rule.id, eventId: event.id });
      return;
    }
    const destination = "providerId" in action ? { providerId: action.providerId } : { type: "webhook" as const, target: action.target };
    const { sent } = await this.dispatcher.enqueue(ctx.tenantId, [destination], {
      kind: "trigger",
      dedupeKey: `trigger:${rule.id}:${event.id}`,
      ...(event.customerId && { customerId: event.customerId }),
      subject: `Trigger ${rule.name}: ${event.eventType}`,
      text: `Event ${event.eventType} for customer ${event.customerId ?? "(none)"} matched trigger ${rule.name}.`,
      payload: {
        trigger: { id: rule.id, name: rule.name },
        event: {
          id: event.id,
          eventType: event.eventType,
          customerId: event.customerId,
          sessionId: event.sessionId,
          timestamp: event.occurredAt.toISOString(),
          properties: event.properties,
        },
      },
    });
    const delivery = sent
      .catch((err) => this.logger.error({ err, tenantId: ctx.tenantId, triggerId: rule.id }, "trigger webhook dispatch failed"))
      .finally(() => this.pending.delete(delivery));
    this.pending.add(delivery);
  }
}
