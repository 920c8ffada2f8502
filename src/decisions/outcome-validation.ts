import type { RespondRequest } from "../../gen/decisioning/v1/decisions_pb.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

const MAX_TEXT = 255;
const DIRECTIONS = ["inbound", "outbound"];

/** A Respond request's normalized identity: who, what, and the outcome type's category. */
export interface ValidOutcome {
  customerId: string;
  outcome: string;
  category: string;
}

/**
 * Checks a Respond request against spec 2.5 and the tenant's outcome types, naming every field at
 * fault at once (one 400), before anything is read or written.
 */
export function validateOutcome(req: RespondRequest, idempotencyKey: string, compiled: CompiledTenant): ValidOutcome {
  const violations: FieldViolation[] = [];
  const outcome = (req.outcome || req.interactionType).trim();
  const customerId = req.customerId.trim();
  if (!idempotencyKey) violations.push({ field: "idempotencyKey", message: "is required (in the body or the Idempotency-Key header)" });
  else if (idempotencyKey.length > MAX_TEXT) violations.push({ field: "idempotencyKey", message: `must be at most ${MAX_TEXT} characters` });
  if (!customerId) violations.push({ field: "customerId", message: "is required" });
  else if (req.customerId.length > MAX_TEXT) violations.push({ field: "customerId", message: `must be at most ${MAX_TEXT} characters` });
  const category = compiled.outcomeTypes.get(outcome);
  if (!outcome) violations.push({ field: "outcome", message: "is required" });
  else if (!category) violations.push({ field: "outcome", message: `unknown outcome type ${outcome}` });
  if (!req.creativeId) {
    if (!req.recommendationId && !req.interactionId) violations.push({ field: "recommendationId", message: "is required unless creativeId is given" });
    if (req.rank === undefined) violations.push({ field: "rank", message: "is required unless creativeId is given" });
  }
  if (req.rank !== undefined && req.rank < 1) violations.push({ field: "rank", message: "must be at least 1" });
  if (req.direction && !DIRECTIONS.includes(req.direction)) violations.push({ field: "direction", message: "must be inbound or outbound" });
  if (req.conversionValue !== undefined && !Number.isFinite(req.conversionValue)) violations.push({ field: "conversionValue", message: "must be a finite number" });
  if (req.responseTime !== undefined && !(req.responseTime >= 0)) violations.push({ field: "responseTime", message: "must be a number of milliseconds" });
  // interactionId is a stored column of uuid type: one in another form could only fail the write.
  for (const field of ["offerId", "channelId", "placementId", "interactionId"] as const) {
    if (req[field] && !isUuid(req[field])) violations.push({ field, message: "must be an id" });
  }
  if (violations.length) throw invalidFields(violations);
  return { customerId, outcome, category: category! };
}
