import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import { isAppError } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { DefinitionStore } from "./definition-store.js";
import type { EnrollmentRow, EnrollmentStore, StepResult } from "./enrollment-store.js";
import type { JourneyRow, JourneyStepValue } from "./events-mapper.js";

/**
 * How a `decision` step asks the decision engine (src/main.ts connects it to Recommend, so the
 * decision is stored, traced and counted against the workspace's decision quota like any other).
 */
export interface JourneyDecider {
  decide(ctx: TenantContext, customerId: string, step: JourneyStepValue): Promise<{ recommendationId: string; offerIds: string[] }>;
}

export interface EnrollmentCause {
  triggerId: string | null;
  eventId: string | null;
}

/**
 * Enrols customers and runs the journey's steps on enrollment. Enrolment is idempotent across
 * processes: the active-enrollment unique index admits one, and only the enrolment that inserted
 * the row runs the steps, so a customer is never decided for twice by concurrent triggers. An
 * enrollment ends by its journey's duration (completed) or an exit event (exited); docs/events.md.
 */
export class JourneyRunner {
  constructor(
    private readonly journeys: DefinitionStore<JourneyRow>,
    private readonly enrollments: EnrollmentStore,
    private readonly decider: JourneyDecider,
    private readonly logger: Logger,
  ) {}

  /** The new enrollment, or null when the journey is gone or inactive or the customer is already in it. */
  async enrol(ctx: TenantContext, journeyId: string, customerId: string, cause: EnrollmentCause): Promise<EnrollmentRow | null> {
    const journey = await this.journeys.find(ctx.tenantId, journeyId);
    if (!journey || journey.status !== "active") return null;
    const row = await this.enrollments.enrol(
      ctx.tenantId,
      { id: newId(), journey_id: journeyId, customer_id: customerId, trigger_id: cause.triggerId, event_id: cause.eventId },
      journey.duration_hours,
    );
    if (!row) return null;
    const steps: StepResult[] = [];
    for (const step of journey.steps) steps.push(await this.run(ctx, customerId, step));
    return this.enrollments.finishSteps(ctx.tenantId, row.id, steps);
  }

  /** The event's type exits the customer from every journey that lists it (before any trigger enrols again). */
  async exitOn(ctx: TenantContext, customerId: string, eventType: string, eventId: string): Promise<number> {
    return this.enrollments.exitOn(ctx.tenantId, customerId, eventType, eventId);
  }

  /** A failed step (the quota is spent, no flow) is recorded on the enrollment, not thrown: the event stays accepted. */
  private async run(ctx: TenantContext, customerId: string, step: JourneyStepValue): Promise<StepResult> {
    try {
      const decision = await this.decider.decide(ctx, customerId, step);
      return { type: step.type, status: "ok", recommendationId: decision.recommendationId, offerIds: decision.offerIds };
    } catch (err) {
      if (!isAppError(err)) this.logger.error({ err, tenantId: ctx.tenantId }, "journey decision step failed");
      return { type: step.type, status: "failed", offerIds: [], error: isAppError(err) ? `${err.reason}: ${err.message}` : "internal error" };
    }
  }
}
