import { create } from "@bufbuild/protobuf";
import { DeleteResponseSchema, type DeleteResponse } from "../../gen/decisioning/v1/catalog_pb.js";
import {
  ListJourneyEnrollmentsResponseSchema,
  ListJourneysResponseSchema,
  type Journey,
  type JourneyIdRequest,
  type JourneyWrite,
  type ListJourneyEnrollmentsRequest,
  type ListJourneyEnrollmentsResponse,
  type ListJourneysRequest,
  type ListJourneysResponse,
} from "../../gen/decisioning/v1/events_pb.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { DefinitionCrud } from "./definition-crud.js";
import type { EnrollmentStore } from "./enrollment-store.js";
import { toEnrollment, toJourney, type JourneyRow, type JourneyStepValue } from "./events-mapper.js";

const STATUSES = ["active", "inactive"];
const STEP_TYPES = ["decision"];
/** Recommend's own bound on offers per decision. */
const MAX_STEP_COUNT = 50;
/** A journey is a short sequence run on enrollment, not a program. */
const MAX_STEPS = 20;
const MAX_EXIT_EVENTS = 20;
const MAX_EVENT_TYPE = 255;
/** A year: longer, and "until an exit event" (no duration) says it better. */
const MAX_DURATION_HOURS = 8760;

export interface JourneyReferences {
  flowExists(tenantId: string, idOrKey: string): Promise<boolean>;
}

/** Journeys' routes (spec 4.21 `journeys`) and their enrollments; enrolment itself is journey-runner.ts. */
export class JourneyService {
  constructor(
    private readonly crud: DefinitionCrud<JourneyRow>,
    private readonly enrollments: EnrollmentStore,
    private readonly references: JourneyReferences,
  ) {}

  async listJourneys(ctx: TenantContext, req: ListJourneysRequest): Promise<ListJourneysResponse> {
    const page = await this.crud.page(ctx, req);
    return create(ListJourneysResponseSchema, { data: page.rows.map(toJourney), pagination: page.pagination });
  }

  async getJourney(ctx: TenantContext, req: JourneyIdRequest): Promise<Journey> {
    return toJourney(await this.crud.get(ctx, req.id));
  }

  async createJourney(ctx: TenantContext, req: JourneyWrite): Promise<Journey> {
    return toJourney(await this.crud.create(ctx, await this.checkedValues(ctx, req)));
  }

  async updateJourney(ctx: TenantContext, req: JourneyWrite): Promise<Journey> {
    await this.crud.get(ctx, req.id);
    return toJourney(await this.crud.replace(ctx, req.id, await this.checkedValues(ctx, req)));
  }

  /** journeyValues, and each step's flow a live flow of the tenant (spec 7: an unknown reference in a body is 400). */
  private async checkedValues(ctx: TenantContext, req: JourneyWrite): Promise<ReturnType<typeof journeyValues>> {
    const values = journeyValues(req);
    const violations = await journeyFlowViolations(values.steps, (flow) => this.references.flowExists(ctx.tenantId, flow));
    if (violations.length) throw invalidFields(violations);
    return values;
  }

  async deleteJourney(ctx: TenantContext, req: JourneyIdRequest): Promise<DeleteResponse> {
    await this.crud.remove(ctx, req.id);
    return create(DeleteResponseSchema, { success: true, id: req.id });
  }

  async listJourneyEnrollments(ctx: TenantContext, req: ListJourneyEnrollmentsRequest): Promise<ListJourneyEnrollmentsResponse> {
    const page = cursorPageRequest(req);
    await this.crud.get(ctx, req.id);
    const result = cursorPage(await this.enrollments.page(ctx.tenantId, req.id, page, req.customerId || null), page.limit);
    return create(ListJourneyEnrollmentsResponseSchema, { data: result.rows.map(toEnrollment), pagination: result.pagination });
  }
}

/**
 * The steps whose flow names no live decision flow (by id or key, as Recommend's `flow`): the route's
 * check, and an import's, which looks inside its own transaction (imported flows are not committed yet).
 */
export async function journeyFlowViolations(steps: readonly JourneyStepValue[], flowExists: (idOrKey: string) => Promise<boolean>): Promise<FieldViolation[]> {
  const violations: FieldViolation[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.flow && !(await flowExists(step.flow))) violations.push({ field: `steps[${i}].flow`, message: `unknown decision flow ${step.flow}` });
  }
  return violations;
}

/** Every field of a journey, each problem named (400); also what an imported journey is held to. */
export function journeyValues(req: JourneyWrite) {
  const violations: FieldViolation[] = [];
  const name = req.name.trim();
  if (!name) violations.push({ field: "name", message: "is required" });
  const status = req.status ?? "active";
  if (!STATUSES.includes(status)) violations.push({ field: "status", message: `must be one of ${STATUSES.join(", ")}` });
  if (!req.steps.length) violations.push({ field: "steps", message: "needs at least one step" });
  if (req.steps.length > MAX_STEPS) violations.push({ field: "steps", message: `has at most ${MAX_STEPS} steps` });
  const steps: JourneyStepValue[] = req.steps.map((s, i) => {
    if (!STEP_TYPES.includes(s.type)) violations.push({ field: `steps[${i}].type`, message: `must be one of ${STEP_TYPES.join(", ")}` });
    if (s.count !== undefined && !(s.count >= 1 && s.count <= MAX_STEP_COUNT)) {
      violations.push({ field: `steps[${i}].count`, message: `must be between 1 and ${MAX_STEP_COUNT}` });
    }
    return { type: "decision", ...(s.flow ? { flow: s.flow } : {}), ...(s.count !== undefined ? { count: s.count } : {}) };
  });
  const exitEventTypes = req.exitEventTypes.map((t) => t.trim());
  if (exitEventTypes.length > MAX_EXIT_EVENTS) violations.push({ field: "exitEventTypes", message: `has at most ${MAX_EXIT_EVENTS} event types` });
  exitEventTypes.forEach((t, i) => {
    if (!t || t.length > MAX_EVENT_TYPE) violations.push({ field: `exitEventTypes[${i}]`, message: `must be 1 to ${MAX_EVENT_TYPE} characters` });
  });
  const durationHours = req.durationHours ?? null;
  if (durationHours !== null && !(durationHours >= 0 && durationHours <= MAX_DURATION_HOURS)) {
    violations.push({ field: "durationHours", message: `must be between 0 and ${MAX_DURATION_HOURS} hours, or null for no completion by time` });
  }
  if (violations.length) throw invalidFields(violations);
  return { name, steps, status, exit_event_types: [...new Set(exitEventTypes)], duration_hours: durationHours };
}
