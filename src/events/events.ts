import type { Sequelize } from "sequelize";
import { EventService as EventServiceDesc, JourneyService as JourneyServiceDesc, TriggerService as TriggerServiceDesc } from "../../gen/decisioning/v1/events_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { CustomerEventHistory, CustomerJourneyHistory } from "../customers/customer-activity.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { Logger } from "../platform/logger.js";
import type { RedisClient } from "../platform/redis.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { DefinitionCrud } from "./definition-crud.js";
import { DefinitionStore } from "./definition-store.js";
import { EnrollmentStore } from "./enrollment-store.js";
import { EventService } from "./event-service.js";
import { EventStore } from "./event-store.js";
import { eventRetentionJob, journeyCompletionJob } from "./event-jobs.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import { createRedisEventStream, NO_EVENT_STREAM, type EventStream } from "./event-stream.js";
import { journeySnapshot, triggerSnapshot, type JourneyRow, type TriggerRow } from "./events-mapper.js";
import { JourneyRunner, type JourneyDecider } from "./journey-runner.js";
import { JourneyService, type JourneyReferences } from "./journey-service.js";
import { TriggerEvaluator } from "./trigger-evaluator.js";
import { TriggerService, type TriggerReferences } from "./trigger-service.js";

export interface EventsOptions {
  db: Sequelize;
  /** Null: no stream, every streamId is null (docs/events.md). */
  redis: RedisClient | null;
  streamMaxLen: number;
  /** EVENT_RETENTION_DAYS: the events-retention job deletes older events. */
  retentionDays: number;
  audit: AuditLog;
  dispatcher: Dispatcher;
  decider: JourneyDecider;
  providerExists: TriggerReferences["providerExists"];
  /** A journey step's `flow`, an id or key as Recommend takes it, must name a live flow of the tenant. */
  flowExists: JourneyReferences["flowExists"];
  logger: Logger;
}

export interface Events {
  services: ServiceRegistration[];
  /** What the unified profile and CLV read (src/customers/customer-activity.ts). */
  history: CustomerEventHistory;
  /** The customers' journey enrollments, for the unified profile. */
  journeys: CustomerJourneyHistory;
  /** GDPR erasure's share in Redis: the customer's entries in the tenant's event stream. */
  streamEntries: Pick<EventStream, "forgetCustomer" | "countCustomer">;
  /** Resolves when trigger webhooks handed to the dispatcher have settled. */
  settled(): Promise<void>;
  /** events-retention (daily, events older than EVENT_RETENTION_DAYS) and journeys-complete (every 5 minutes). */
  jobs: ScheduledJob[];
}

/** Events, trigger rules and journeys (spec 2.14, 4.17, 4.21, 6), built once at start-up. */
export function createEvents(o: EventsOptions): Events {
  const eventStore = new EventStore(o.db);
  const triggerStore = new DefinitionStore<TriggerRow>(o.db, "trigger_rules", new Set(["conditions", "action"]));
  const journeyStore = new DefinitionStore<JourneyRow>(o.db, "journeys", new Set(["steps"]));
  const enrollments = new EnrollmentStore(o.db);
  const runner = new JourneyRunner(journeyStore, enrollments, o.decider, o.logger);
  const evaluator = new TriggerEvaluator(triggerStore, runner, o.dispatcher, o.logger);
  const stream = o.redis ? createRedisEventStream(o.redis, o.streamMaxLen, o.logger) : NO_EVENT_STREAM;
  const events = new EventService(eventStore, stream, evaluator, o.logger);
  const triggers = new TriggerService(new DefinitionCrud({ store: triggerStore, audit: o.audit, entityType: "trigger", snapshot: triggerSnapshot }), {
    journeyExists: async (tenantId, id) => (await journeyStore.find(tenantId, id)) !== null,
    providerExists: o.providerExists,
  });
  const journeys = new JourneyService(new DefinitionCrud({ store: journeyStore, audit: o.audit, entityType: "journey", snapshot: journeySnapshot }), enrollments, {
    flowExists: o.flowExists,
  });
  return {
    services: [
      { service: EventServiceDesc, impl: { ingestEvents: (ctx, req) => events.ingestEvents(ctx, req) } },
      {
        service: TriggerServiceDesc,
        impl: {
          listTriggers: (ctx, req) => triggers.listTriggers(ctx, req),
          createTrigger: (ctx, req) => triggers.createTrigger(ctx, req),
          getTrigger: (ctx, req) => triggers.getTrigger(ctx, req),
          updateTrigger: (ctx, req) => triggers.updateTrigger(ctx, req),
          deleteTrigger: (ctx, req) => triggers.deleteTrigger(ctx, req),
        },
      },
      {
        service: JourneyServiceDesc,
        impl: {
          listJourneys: (ctx, req) => journeys.listJourneys(ctx, req),
          createJourney: (ctx, req) => journeys.createJourney(ctx, req),
          getJourney: (ctx, req) => journeys.getJourney(ctx, req),
          updateJourney: (ctx, req) => journeys.updateJourney(ctx, req),
          deleteJourney: (ctx, req) => journeys.deleteJourney(ctx, req),
          listJourneyEnrollments: (ctx, req) => journeys.listJourneyEnrollments(ctx, req),
        },
      },
    ],
    history: eventStore,
    journeys: { enrollments: (tenantId, customerId, limit) => enrollments.forCustomer(tenantId, customerId, limit) },
    streamEntries: stream,
    settled: () => evaluator.settled(),
    jobs: [eventRetentionJob(eventStore, o.retentionDays, o.logger), journeyCompletionJob(enrollments, o.logger)],
  };
}
