import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  ListDecisionTracesResponseSchema,
  type DecisionTrace,
  type GetDecisionTraceRequest,
  type ListDecisionTracesRequest,
  type ListDecisionTracesResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { limitOffsetRequest } from "../platform/pagination.js";
import { toTraceSummary } from "./decision-mapper.js";
import type { DecisionStore } from "./decision-store.js";
import type { TraceReader } from "./trace-reader.js";

/** Decision traces (spec 4.11): a page of summaries, or one trace replayed from its record. */
export class TraceService {
  constructor(
    private readonly store: DecisionStore,
    private readonly traces: TraceReader,
  ) {}

  async listDecisionTraces(ctx: TenantContext, req: ListDecisionTracesRequest): Promise<ListDecisionTracesResponse> {
    const violations: FieldViolation[] = [];
    const { limit, offset } = limitOffsetRequest(req, 100, 50, violations);
    if (req.recommendationId && !isUuid(req.recommendationId)) violations.push({ field: "recommendationId", message: "must be a recommendation id" });
    const since = req.since ? timestampDate(req.since) : undefined;
    const until = req.until ? timestampDate(req.until) : undefined;
    if (since && until && since > until) violations.push({ field: "until", message: "must not be before since" });
    if (violations.length) throw invalidFields(violations);
    const filter = { customerId: req.customerId || undefined, recommendationId: req.recommendationId || undefined, since, until };
    const { rows, total } = await this.store.traces(ctx.tenantId, filter, limit, offset);
    return create(ListDecisionTracesResponseSchema, { data: rows.map(toTraceSummary), pagination: { total, limit, offset } });
  }

  async getDecisionTrace(ctx: TenantContext, req: GetDecisionTraceRequest): Promise<DecisionTrace> {
    const trace = isUuid(req.id) ? await this.traces.get(ctx.tenantId, req.id) : null;
    if (!trace) throw notFound("decision trace", req.id);
    return trace;
  }
}
