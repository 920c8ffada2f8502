import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  EventResultSchema,
  IngestEventsResponseSchema,
  type IngestEventsRequest,
  type IngestEventsResponse,
} from "../../gen/decisioning/v1/events_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import type { EventStore } from "./event-store.js";
import type { EventStream } from "./event-stream.js";
import { validateEventBatch } from "./event-validation.js";
import type { TriggerEvaluator } from "./trigger-evaluator.js";

/**
 * POST /events (spec 4.17): validate the whole batch, store it in one statement, then per event
 * evaluate the trigger rules and publish to the tenant's stream, independently: a stream failure
 * gives streamId null and never skips a trigger, a failed trigger action gives
 * triggersEvaluated false (logged) and never un-accepts the stored event.
 */
export class EventService {
  constructor(
    private readonly store: EventStore,
    private readonly stream: EventStream,
    private readonly triggers: TriggerEvaluator,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async ingestEvents(ctx: TenantContext, req: IngestEventsRequest): Promise<IngestEventsResponse> {
    const receivedAt = this.now();
    const events = validateEventBatch(req.events, receivedAt);
    await this.store.insertAll(ctx.tenantId, events);
    const rules = await this.triggers.activeRules(ctx.tenantId, events.map((e) => e.eventType)).catch((err) => {
      this.logger.error({ err, tenantId: ctx.tenantId }, "trigger rules not loaded; events accepted without evaluation");
      return null;
    });
    const results: MessageInitShape<typeof EventResultSchema>[] = [];
    // In order, so that an earlier event's enrolment is in place when a later one's rules run.
    for (const event of events) {
      const [streamId, matched] = await Promise.all([
        this.stream.publish(ctx.tenantId, event, receivedAt),
        rules === null
          ? null
          : this.triggers.evaluate(ctx, event, rules, receivedAt.getTime()).catch((err) => {
              this.logger.error({ err, tenantId: ctx.tenantId, eventId: event.id }, "trigger evaluation failed");
              return null;
            }),
      ]);
      results.push({
        id: event.id,
        eventType: event.eventType,
        streamId: streamId ?? undefined,
        triggersEvaluated: matched !== null,
        triggersMatched: matched ?? 0,
      });
    }
    return create(IngestEventsResponseSchema, { accepted: events.length, results });
  }
}
