import type { DescMethod, JsonValue } from "@bufbuild/protobuf";
import { z, type ZodRawShape } from "zod";
import { OfferService } from "../../gen/decisioning/v1/catalog_pb.js";
import { DecisionTraceService } from "../../gen/decisioning/v1/decisions_pb.js";
import { ExperimentService } from "../../gen/decisioning/v1/experiments_pb.js";
import type { ServiceCaller, ToolRequest } from "./service-caller.js";

/** One MCP tool: its input schema (zod, as the SDK expects) and what it runs for the caller. */
export interface McpTool<S extends ZodRawShape = ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: S;
  readOnly: boolean;
  run(caller: ServiceCaller, args: z.objectOutputType<S, z.ZodTypeAny>): Promise<JsonValue>;
}

const id = (what: string) => z.string().min(1).max(255).describe(what);
const struct = (what: string) => z.record(z.string(), z.any()).describe(what);

function tool<S extends ZodRawShape>(t: McpTool<S>): McpTool {
  return t as unknown as McpTool;
}

/** A tool that is one service method: its arguments are the method's request JSON. */
function methodTool<S extends ZodRawShape>(t: Omit<McpTool<S>, "run"> & { method: DescMethod }): McpTool {
  const { method, ...rest } = t;
  return tool({ ...rest, run: (caller, args) => caller.invoke(method, args as ToolRequest) });
}

/** What a dry run says in words: why each offer ranked where it did, and why the others did not. */
function explainDecision(response: JsonValue): JsonValue {
  const r = response as { offers?: Array<Record<string, unknown>>; rejectedOffers?: Array<Record<string, unknown>>; experiment?: Record<string, unknown>; degraded?: boolean };
  const selected = (r.offers ?? []).map(
    (o) =>
      `#${o.rank} ${o.offerName} (${o.offerId}): score ${o.score}, propensity ${o.propensity} from ${o.propensitySource}${o.mandatory ? ", mandatory" : ""}`,
  );
  const rejected = (r.rejectedOffers ?? []).map((x) => `${x.offerName ?? x.offerId} rejected at ${x.stage}: ${x.reason}`);
  return {
    summary: selected.length ? `${selected.length} offer(s) would be recommended; ${rejected.length} rejected.` : `No offer would be recommended; ${rejected.length} rejected.`,
    selected,
    rejected,
    ...(r.experiment ? { experiment: `decided under experiment ${r.experiment.key ?? r.experiment.id}, variant ${r.experiment.variant}` } : {}),
    ...(r.degraded ? { degraded: "scoring degraded: some candidates scored with the fallback" } : {}),
  };
}

/**
 * The tools of the MCP endpoint (docs/mcp.md). Each one but the dry run is a service method
 * through ServiceCaller, so that its role (create_offer: editor), validation and errors are the
 * API's own.
 */
export const MCP_TOOLS: McpTool[] = [
  methodTool({
    name: "list_offers",
    title: "List offers",
    description: "Lists the tenant's offers, newest first, a page at a time (keyset: pass the last id as cursor).",
    readOnly: true,
    inputSchema: {
      limit: z.number().int().min(1).max(100).optional().describe("Page size, default 50, at most 100"),
      cursor: z.string().max(255).optional().describe("The last offer id of the previous page"),
      includeDeleted: z.boolean().optional().describe("Include soft-deleted offers"),
    },
    method: OfferService.method.listOffers,
  }),
  methodTool({
    name: "get_offer",
    title: "Read an offer",
    description: "Reads one offer by id or name.",
    readOnly: true,
    inputSchema: { id: id("Offer id or name") },
    method: OfferService.method.getOffer,
  }),
  methodTool({
    name: "create_offer",
    title: "Create an offer",
    description: "Creates an offer (editor role or above). Fields as POST /api/v1/offers; the answer is the created offer.",
    readOnly: false,
    inputSchema: {
      name: z.string().min(1).max(255).describe("Unique offer name"),
      description: z.string().max(5000).optional(),
      shortDesc: z.string().max(1000).optional(),
      status: z.string().max(50).optional().describe("Offer status, as the API takes it"),
      priority: z.number().int().optional(),
      category: z.string().max(255).optional(),
      categoryId: z.string().max(255).optional(),
      group: z.string().max(255).optional(),
      productType: z.string().max(255).optional(),
      businessValue: z.number().optional(),
      margin: z.number().optional(),
      revenueValue: z.number().optional(),
      tags: z.array(z.string().max(255)).max(100).optional(),
      eligibility: struct("Eligibility rules, as the API takes them").optional(),
      schedule: struct("Schedule, as the API takes it").optional(),
      budget: struct("Budget, as the API takes it").optional(),
      metadata: struct("Free-form metadata").optional(),
    },
    method: OfferService.method.createOffer,
  }),
  methodTool({
    name: "list_decision_traces",
    title: "List decision traces",
    description: "Lists recorded decision traces, newest first, optionally of one customer or recommendation (offset pagination).",
    readOnly: true,
    inputSchema: {
      customerId: z.string().max(255).optional(),
      recommendationId: z.string().max(255).optional(),
      limit: z.number().int().min(1).max(100).optional(),
      offset: z.number().int().min(0).optional(),
    },
    method: DecisionTraceService.method.listDecisionTraces,
  }),
  methodTool({
    name: "get_decision_trace",
    title: "Read a decision trace",
    description: "Reads one decision trace in full: candidates, scores, rejections and the experiment.",
    readOnly: true,
    inputSchema: { id: id("Decision trace id") },
    method: DecisionTraceService.method.getDecisionTrace,
  }),
  methodTool({
    name: "get_experiment_results",
    title: "Read experiment results",
    description: "Reads an experiment's results per variant: decisions, conversions, rates, intervals and significance.",
    readOnly: true,
    inputSchema: {
      id: id("Experiment id"),
      confidenceLevel: z.number().gt(0).lt(1).optional().describe("Default 0.95"),
    },
    method: ExperimentService.method.getExperimentResults,
  }),
  tool({
    name: "dry_run_recommend",
    title: "Dry-run Recommend",
    description:
      "Runs Recommend for a customer as it would decide now, and explains the result, without recording anything: no recommendation, impression or trace is stored, no cap or budget taken, and it does not count against the decision quota.",
    readOnly: true,
    inputSchema: {
      customerId: z.string().min(1).max(255).describe("The customer to decide for"),
      channel: z.string().max(255).optional().describe("Channel id or name"),
      placements: z.array(z.string().max(255)).max(20).optional().describe("Placement ids or names"),
      limit: z.number().int().min(1).max(50).optional().describe("Offers to return, default 3"),
      flow: z.string().max(255).optional().describe("Decision flow id or key"),
      attributes: struct("Customer attributes overriding stored ones for this decision").optional(),
      context: struct("Request context (device, page, ...)").optional(),
    },
    run: async (caller, args) => {
      const decision = await caller.preview(args as ToolRequest);
      return { dryRun: true, decision, explanation: explainDecision(decision) };
    },
  }),
];
