import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  JourneyEnrollmentSchema,
  JourneySchema,
  TriggerSchema,
  type Journey,
  type JourneyEnrollment,
  type Trigger,
} from "../../gen/decisioning/v1/events_pb.js";
import type { Condition } from "../core/index.js";
import type { DefinitionRow } from "./definition-store.js";
import type { EnrollmentRow } from "./enrollment-store.js";

/** Spec 4.21 trigger action: enrol in a journey, or an outbound webhook (a provider, or a legacy URL). */
export type TriggerActionValue =
  | { type: "journey"; journeyId: string }
  | { type: "webhook"; providerId: string }
  | { type: "webhook"; target: string };

export interface TriggerRow extends DefinitionRow {
  event_type: string;
  conditions: Condition;
  action: TriggerActionValue;
}

/** A journey step: `decision` asks the decision engine for the customer's next best action. */
export interface JourneyStepValue {
  type: "decision";
  flow?: string;
  count?: number;
}

export interface JourneyRow extends DefinitionRow {
  steps: JourneyStepValue[];
  exit_event_types: string[];
  duration_hours: number | null;
}

export function toTrigger(row: TriggerRow): Trigger {
  const a = row.action as Partial<Record<"journeyId" | "providerId" | "target", string>> & { type: string };
  return create(TriggerSchema, {
    id: row.id,
    name: row.name,
    eventType: row.event_type,
    conditions: row.conditions as JsonObject,
    action: { type: a.type, journeyId: a.journeyId, providerId: a.providerId, target: a.target },
    status: row.status,
    version: row.version,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

export function toJourney(row: JourneyRow): Journey {
  return create(JourneySchema, {
    id: row.id,
    name: row.name,
    steps: row.steps,
    status: row.status,
    version: row.version,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    exitEventTypes: row.exit_event_types,
    durationHours: row.duration_hours ?? undefined,
  });
}

export function toEnrollment(row: EnrollmentRow): JourneyEnrollment {
  return create(JourneyEnrollmentSchema, {
    id: row.id,
    journeyId: row.journey_id,
    customerId: row.customer_id,
    status: row.status,
    triggerId: row.trigger_id ?? undefined,
    eventId: row.event_id ?? undefined,
    steps: row.steps,
    enrolledAt: timestampFromDate(row.enrolled_at),
    endedAt: row.ended_at ? timestampFromDate(row.ended_at) : undefined,
    exitEventId: row.exit_event_id ?? undefined,
  });
}

/** The audited definition of a rule or journey (configuration only). */
export function triggerSnapshot(row: TriggerRow): Record<string, unknown> {
  return { name: row.name, eventType: row.event_type, conditions: row.conditions, action: row.action, status: row.status };
}

export function journeySnapshot(row: JourneyRow): Record<string, unknown> {
  return { name: row.name, steps: row.steps, status: row.status, exitEventTypes: row.exit_event_types, durationHours: row.duration_hours };
}
