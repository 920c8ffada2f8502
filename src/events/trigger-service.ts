import { create } from "@bufbuild/protobuf";
import { DeleteResponseSchema, type DeleteResponse } from "../../gen/decisioning/v1/catalog_pb.js";
import {
  ListTriggersResponseSchema,
  type ListTriggersRequest,
  type ListTriggersResponse,
  type Trigger,
  type TriggerAction,
  type TriggerIdRequest,
  type TriggerWrite,
} from "../../gen/decisioning/v1/events_pb.js";
import { validateCondition, type Condition } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { DefinitionCrud } from "./definition-crud.js";
import { toTrigger, type TriggerActionValue, type TriggerRow } from "./events-mapper.js";

const STATUSES = ["active", "inactive"];

/** What a rule's action may name, checked in the caller's tenant: a foreign id is a 400 (spec 7). */
export interface TriggerReferences {
  journeyExists(tenantId: string, id: string): Promise<boolean>;
  providerExists(tenantId: string, id: string): Promise<boolean>;
}

/** Trigger rules' routes (spec 4.21 `triggers`); evaluation is trigger-evaluator.ts. */
export class TriggerService {
  constructor(
    private readonly crud: DefinitionCrud<TriggerRow>,
    private readonly references: TriggerReferences,
  ) {}

  async listTriggers(ctx: TenantContext, req: ListTriggersRequest): Promise<ListTriggersResponse> {
    const page = await this.crud.page(ctx, req);
    return create(ListTriggersResponseSchema, { data: page.rows.map(toTrigger), pagination: page.pagination });
  }

  async getTrigger(ctx: TenantContext, req: TriggerIdRequest): Promise<Trigger> {
    return toTrigger(await this.crud.get(ctx, req.id));
  }

  async createTrigger(ctx: TenantContext, req: TriggerWrite): Promise<Trigger> {
    return toTrigger(await this.crud.create(ctx, await triggerValues(ctx.tenantId, req, this.references)));
  }

  async updateTrigger(ctx: TenantContext, req: TriggerWrite): Promise<Trigger> {
    await this.crud.get(ctx, req.id); // a foreign or unknown id is a 404 before its body is judged
    return toTrigger(await this.crud.replace(ctx, req.id, await triggerValues(ctx.tenantId, req, this.references)));
  }

  async deleteTrigger(ctx: TenantContext, req: TriggerIdRequest): Promise<DeleteResponse> {
    await this.crud.remove(ctx, req.id);
    return create(DeleteResponseSchema, { success: true, id: req.id });
  }
}

/**
 * Every field of a rule, each problem named (400); also what an imported rule is held to, whose
 * references the import checks itself (docs/portability.md).
 */
export async function triggerValues(tenantId: string, req: TriggerWrite, references: TriggerReferences) {
  const violations: FieldViolation[] = [];
  const name = req.name.trim();
  if (!name) violations.push({ field: "name", message: "is required" });
  const eventType = req.eventType.trim();
  if (!eventType) violations.push({ field: "eventType", message: "is required" });
  const conditions = (req.conditions ?? {}) as Condition;
  for (const problem of validateCondition(conditions, "conditions")) {
    const [field, ...rest] = problem.split(": ");
    violations.push({ field, message: rest.join(": ") });
  }
  const status = req.status ?? "active";
  if (!STATUSES.includes(status)) violations.push({ field: "status", message: `must be one of ${STATUSES.join(", ")}` });
  const action = await actionValue(tenantId, req.action, references, violations);
  if (violations.length) throw invalidFields(violations);
  return { name, event_type: eventType, conditions, action: action!, status };
}

async function actionValue(
tenantId: string,
a: TriggerAction | undefined,
references: TriggerReferences,
violations: FieldViolation[],
): Promise<TriggerActionValue | null> {
  if (!a) {
    violations.push({ field: "action", message: "is required: {type: journey, journeyId} or {type: webhook, providerId | target}" });
    return null;
  }
  if (a.type === "journey") {
    const id = a.journeyId ?? "";
    if (!isUuid(id) || !(await references.journeyExists(tenantId, id))) {
      violations.push({ field: "action.journeyId", message: id ? `unknown journey ${id}` : "is required for a journey action" });
    }
    return { type: "journey", journeyId: id };
  }
  if (a.type === "webhook") {
    if (a.providerId && a.target) violations.push({ field: "action", message: "give providerId or target, not both" });
    else if (a.providerId) {
      if (!isUuid(a.providerId) || !(await references.providerExists(tenantId, a.providerId))) {
        violations.push({ field: "action.providerId", message: `unknown notification provider ${a.providerId}` });
      }
      return { type: "webhook", providerId: a.providerId };
    } else if (a.target) {
      if (!isHttpUrl(a.target)) violations.push({ field: "action.target", message: "must be an http or https URL" });
      return { type: "webhook", target: a.target };
    } else violations.push({ field: "action", message: "a webhook action needs providerId or target" });
    return null;
  }
  violations.push({ field: "action.type", message: "must be journey or webhook" });
  return null;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
