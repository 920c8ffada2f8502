import { create, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CustomerIdentitySchema,
  DeleteCustomerIdentityResponseSchema,
  ListCustomerIdentitiesResponseSchema,
  ProfileSectionSchema,
  UnifiedProfileSchema,
  type CreateCustomerIdentityRequest,
  type CustomerIdentity,
  type DeleteCustomerIdentityRequest,
  type DeleteCustomerIdentityResponse,
  type GetUnifiedProfileRequest,
  type ListCustomerIdentitiesRequest,
  type ListCustomerIdentitiesResponse,
  type UnifiedProfile,
} from "../../gen/decisioning/v1/customers_pb.js";
import { segmentMemberships, type RfmFacts, type SegmentDefinition, type SegmentMembership } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { conflict, invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { clvJson } from "./clv-mapper.js";
import type { ClvRow, ClvStore } from "./clv-store.js";
import type { CustomerEventHistory, CustomerJourneyHistory, DeliveryEventHistory, JourneyEnrollmentView } from "./customer-activity.js";
import { customerIdOf } from "./customer-id.js";
import type { DecisionHistory } from "./decision-history.js";
import type { IdentityLinkRow, IdentityLinkStore } from "./identity-link-store.js";

/** Spec 2.11: the legacy form's section names, in the order they are returned. */
export const PROFILE_SECTIONS = ["identities", "interactions", "segments", "journeys", "experiments", "consent"] as const;
type SectionName = (typeof PROFILE_SECTIONS)[number];
/** Spec 2.11: the interaction history shows the last 20. */
export const PROFILE_INTERACTIONS = 20;
/** Journey enrollments shown in the legacy profile: the newest. */
export const PROFILE_JOURNEYS = 50;
const IDENTITY_TYPE = /^[a-z][a-z0-9_-]{0,49}$/;
const MAX_IDENTITY_VALUE = 500;

export interface ProfileServiceDeps {
  identities: IdentityLinkStore;
  clv: ClvStore;
  decisions: DecisionHistory;
  /** Optional ports (src/customers/customer-activity.ts): their entries join the interaction history. */
  events?: CustomerEventHistory;
  deliveries?: DeliveryEventHistory;
  journeys?: CustomerJourneyHistory;
  /** The catalog's active segments (conditions over the customer's attributes): membership beside the CLV segment. */
  segments?: (tenantId: string) => Promise<SegmentDefinition[]>;
}

/** One interaction row of the profile: an impression or outcome, an inbound event, or a delivery report. */
interface HistoryEntry {
  id: string;
  offerId: string | null;
  channelId: string | null;
  interactionType: string;
  timestamp: Date;
  source: "decision" | "event" | "delivery";
}

/** Everything the profile is built from, read in parallel. */
interface CustomerData {
  customer: { attributes: Record<string, unknown>; created_at: Date; updated_at: Date } | null;
  identities: IdentityLinkRow[];
  history: HistoryEntry[];
  clv: ClvRow | null;
  experiments: Awaited<ReturnType<DecisionHistory["customerExperiments"]>>;
  journeys: JourneyEnrollmentView[];
  /** Lifetime totals over the decisions' interactions; null without any interaction or stored record. */
  facts: RfmFacts | null;
  /** The catalog segments the stored attributes match. */
  memberships: SegmentMembership[];
}

function parseSections(raw: string): SectionName[] {
  const names = raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (!names.length) return [...PROFILE_SECTIONS];
  const unknown = names.filter((n) => !(PROFILE_SECTIONS as readonly string[]).includes(n));
  if (unknown.length) throw invalidField("sections", `unknown section ${unknown.join(", ")}; sections are ${PROFILE_SECTIONS.join(", ")}`);
  return PROFILE_SECTIONS.filter((s) => names.includes(s));
}

/** The consent map as rows by channel name; anything but a boolean is not a recorded choice and is left out. */
function consentRows(attributes: Record<string, unknown>): Array<{ channel: string; granted: boolean }> {
  const consent = attributes.consent;
  if (consent === null || typeof consent !== "object" || Array.isArray(consent)) return [];
  return Object.entries(consent as Record<string, unknown>)
    .filter((entry): entry is [string, boolean] => typeof entry[1] === "boolean")
    .map(([channel, granted]) => ({ channel, granted }))
    .sort((a, b) => (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0));
}

const historyJson = (h: HistoryEntry): JsonObject => ({
  id: h.id,
  offerId: h.offerId,
  channelId: h.channelId,
  interactionType: h.interactionType,
  timestamp: h.timestamp.toISOString(),
  source: h.source,
});

/** The unified customer profile (spec 2.11, 4.15) and its identity links. docs/unified-profile.md. */
export class ProfileService {
  constructor(private readonly deps: ProfileServiceDeps) {}

  async getUnifiedProfile(ctx: TenantContext, req: GetUnifiedProfileRequest): Promise<UnifiedProfile> {
    const customerId = customerIdOf(req.customerId);
    const format = req.format.trim() || "legacy";
    if (format !== "legacy" && format !== "structured") throw invalidField("format", "must be legacy or structured");
    if (format === "structured" && req.sections.trim()) throw invalidField("sections", "applies to the legacy form only");
    const sections = format === "legacy" ? parseSections(req.sections) : [];
    const data = await this.read(ctx.tenantId, customerId);
    if (!data.customer && !data.identities.length && !data.history.length && !data.clv) throw notFound("customer", customerId);
    const base = { customerId, tenantId: ctx.tenantId, computedAt: timestampFromDate(new Date()) };
    if (format === "structured") return create(UnifiedProfileSchema, { ...base, ...this.structured(data) });
    return create(UnifiedProfileSchema, {
      ...base,
      sections: sections.map((name) => create(ProfileSectionSchema, { name, data: fromJson(ListValueSchema, this.section(name, data)) })),
    });
  }

  private section(name: SectionName, d: CustomerData): JsonValue[] {
    switch (name) {
      case "identities":
        return d.identities.map((i) => ({ id: i.id, type: i.type, value: i.value, confidence: i.confidence }));
      case "interactions":
        return d.history.map(historyJson);
      case "segments":
        // The CLV segment, then the catalog segments the attributes match (docs/unified-profile.md).
        return [
          ...(d.clv ? [{ segmentId: `clv:${d.clv.segment}`, segmentName: `CLV ${d.clv.segment}`, memberSince: d.clv.segment_since.toISOString() }] : []),
          ...d.memberships.map((m) => ({ segmentId: m.segmentId, segmentName: m.segmentName, memberSince: new Date(m.memberSince).toISOString() })),
        ];
      case "journeys":
        return d.journeys.map((j) => ({ journeyId: j.journeyId, status: j.status, enrolledAt: j.enrolledAt.toISOString() }));
      case "experiments":
        return d.experiments.map((e) => ({ experimentId: e.experiment_id, variant: e.experiment_variant, firstDecisionAt: e.first_at.toISOString() }));
      case "consent":
        return consentRows(d.customer?.attributes ?? {});
    }
  }

  private structured(d: CustomerData) {
    const attributes = d.customer?.attributes ?? {};
    const { consent: _consent, ...demographics } = attributes;
    return {
      demographics: demographics as JsonObject,
      interactions: fromJson(ListValueSchema, d.history.map(historyJson)),
      clv: fromJson(ValueSchema, d.clv ? (clvJson(d.clv) as JsonObject) : null),
      metrics: {
        impressions: d.facts?.impressions ?? 0,
        totalConversionValue: d.facts?.conversionValue ?? 0,
        firstSeenAt: d.facts ? new Date(d.facts.firstAt).toISOString() : null,
        lastSeenAt: d.history[0]?.timestamp.toISOString() ?? (d.facts ? new Date(d.facts.lastAt).toISOString() : null),
        identities: d.identities.length,
      },
      suppressions: fromJson(ListValueSchema, consentRows(attributes).filter((c) => !c.granted).map((c) => ({ channel: c.channel, reason: "consent_refused" }))),
    };
  }

  /** The customer's data from every source at once; the history merged newest first and cut to 20. */
  private async read(tenantId: string, customerId: string): Promise<CustomerData> {
    const { decisions, events, deliveries, journeys } = this.deps;
    const [customer, identities, interactions, recentEvents, recentDeliveries, clv, experiments, facts, enrollments, segments] = await Promise.all([
      decisions.customer(tenantId, customerId),
      this.deps.identities.list(tenantId, customerId),
      decisions.recentInteractions(tenantId, customerId, PROFILE_INTERACTIONS),
      events ? events.recent(tenantId, customerId, PROFILE_INTERACTIONS) : [],
      deliveries ? deliveries.recent(tenantId, customerId, PROFILE_INTERACTIONS) : [],
      this.deps.clv.record(tenantId, customerId),
      decisions.customerExperiments(tenantId, customerId),
      decisions.rfmFacts(tenantId, [customerId]),
      journeys ? journeys.enrollments(tenantId, customerId, PROFILE_JOURNEYS) : [],
      this.deps.segments ? this.deps.segments(tenantId) : [],
    ]);
    const memberships = customer ? segmentMemberships(segments, customer.attributes, customer.updated_at.getTime(), Date.now()) : [];
    const history: HistoryEntry[] = [
      ...interactions.map((i) => ({ id: i.id, offerId: i.offer_id, channelId: i.channel_id, interactionType: i.outcome, timestamp: i.at, source: "decision" as const })),
      ...recentEvents.map((e) => ({ id: e.id, offerId: null, channelId: null, interactionType: e.eventType, timestamp: e.occurredAt, source: "event" as const })),
      ...recentDeliveries.map((e) => ({
        id: e.providerMessageId,
        offerId: null,
        channelId: null,
        interactionType: `delivery_${e.status}`,
        timestamp: e.occurredAt,
        source: "delivery" as const,
      })),
    ];
    history.sort((a, b) => b.timestamp.getTime() - a.timestamp.getTime());
    return {
      customer,
      identities,
      history: history.slice(0, PROFILE_INTERACTIONS),
      clv,
      experiments,
      journeys: enrollments,
      facts: facts.get(customerId) ?? null,
      memberships,
    };
  }

  async listCustomerIdentities(ctx: TenantContext, req: ListCustomerIdentitiesRequest): Promise<ListCustomerIdentitiesResponse> {
    const rows = await this.deps.identities.list(ctx.tenantId, customerIdOf(req.customerId));
    return create(ListCustomerIdentitiesResponseSchema, { data: rows.map(toIdentity) });
  }

  async createCustomerIdentity(ctx: TenantContext, req: CreateCustomerIdentityRequest): Promise<CustomerIdentity> {
    const customerId = customerIdOf(req.customerId);
    const type = req.type.trim();
    const value = req.value.trim();
    const violations: FieldViolation[] = [];
    if (!IDENTITY_TYPE.test(type)) violations.push({ field: "type", message: "is required: lower-case letters, digits, _ or -, at most 50" });
    if (!value || value.length > MAX_IDENTITY_VALUE) violations.push({ field: "value", message: `must be 1 to ${MAX_IDENTITY_VALUE} characters` });
    const confidence = req.confidence ?? 1;
    if (!(confidence >= 0 && confidence <= 1)) violations.push({ field: "confidence", message: "must be between 0 and 1" });
    if (violations.length) throw invalidFields(violations);
    const row = await this.deps.identities.create(ctx.tenantId, { id: newId(), customer_id: customerId, type, value, confidence });
    if (!row) throw conflict("IDENTITY_EXISTS", `customer ${customerId} already has identity ${type} ${value}`);
    return toIdentity(row);
  }

  async deleteCustomerIdentity(ctx: TenantContext, req: DeleteCustomerIdentityRequest): Promise<DeleteCustomerIdentityResponse> {
    const customerId = customerIdOf(req.customerId);
    if (!isUuid(req.id) || !(await this.deps.identities.delete(ctx.tenantId, customerId, req.id))) throw notFound("identity", req.id);
    return create(DeleteCustomerIdentityResponseSchema, { success: true, id: req.id });
  }
}

function toIdentity(row: IdentityLinkRow): CustomerIdentity {
  return create(CustomerIdentitySchema, {
    id: row.id,
    customerId: row.customer_id,
    type: row.type,
    value: row.value,
    confidence: row.confidence,
    createdAt: timestampFromDate(row.created_at),
  });
}
