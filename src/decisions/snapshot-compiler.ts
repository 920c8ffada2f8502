import {
  CONFIG_VALIDATORS,
  prepareSnapshot,
  validateModel,
  type BudgetAllocation,
  type Condition,
  type Creative,
  type DecisionFlow,
  type DecisionSnapshot,
  type ExperimentSplit,
  type ModelConfig,
  type Offer,
  type SnapshotConfig,
} from "../core/index.js";
import { offerEligibility } from "../core/offer-eligibility.js";
import type { CatalogRow, DecisionConfigRows } from "../catalog/catalog-store.js";
import type { Logger } from "../platform/logger.js";
import type { PublishedContent } from "../content/published-content.js";
import type { SettingsRow } from "./decision-store.js";

/** A tenant's configuration, compiled once per change: the core's snapshot plus name lookups. */
export interface CompiledTenant {
  snapshot: DecisionSnapshot;
  settings: SettingsRow;
  /** Channel id or name → channel id. */
  channels: Map<string, string>;
  /** Placement id or name → placement id. */
  placements: Map<string, string>;
  /** Flow id or key → flow id. */
  flows: Map<string, string>;
  /** Outcome-type key → category (positive, negative, impression, neutral): what Respond counts. */
  outcomeTypes: Map<string, string>;
  /**
   * The keys of the outcome types in the impression category, and always `impression` (the outcome
   * of the rows Recommend writes): what Respond counts as an impression row.
   */
  impressionOutcomes: string[];
  /**
   * Ids of the tenant's live offers, whatever their status or whether they compiled: the offers a
   * Respond body may name (spec 7, unknown tenant references are 400).
   */
  offerIds: Set<string>;
  /** Live creatives by id, for Respond's creativeId. */
  creatives: Map<string, Creative>;
  /** Creative id → the published content it serves (docs/content.md). */
  creativeContent: Map<string, PublishedContent>;
  /** Active experiments whose models all score, oldest first (experiment-arms.ts). */
  experiments: ExperimentSplit[];
  /** Model id → model key, for the variant a customer is assigned. */
  modelKeys: Map<string, string>;
  /** Entities left out because their stored configuration no longer compiles (logged). */
  skipped: string[];
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : null);
const obj = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

function toOffer(row: CatalogRow, eligibility: Condition | undefined): Offer {
  return {
    id: row.id,
    name: row.name,
    status: row.status as Offer["status"],
    categoryId: (row.category_id as string | null) ?? null,
    priority: row.priority as number,
    businessValue: row.business_value as number,
    mandatory: row.mandatory as boolean,
    mandatoryExpiresAt: iso(row.mandatory_expires_at),
    emergencyExcluded: row.emergency_excluded as boolean,
    eligibility,
    schedule: obj(row.schedule) as Offer["schedule"],
    budget: obj(row.budget) as Offer["budget"],
    productType: (row.product_type as string) || null,
    margin: (row.margin as number | null) ?? null,
    revenueValue: (row.revenue_value as number | null) ?? null,
    tags: row.tags as string[],
    createdAt: row.created_at.toISOString(),
  };
}

function toBudget(row: CatalogRow): BudgetAllocation {
  const defined = <T>(v: T | null) => (v === null ? undefined : v);
  return {
    id: row.id,
    name: row.name,
    scope: row.scope as BudgetAllocation["scope"],
    scopeId: defined(row.scope_id as string | null),
    maxImpressions: defined(row.max_impressions as number | null),
    maxSpend: defined(row.max_spend as number | null),
    maxConversions: defined(row.max_conversions as number | null),
    costPerImpression: row.cost_per_impression as number,
    costPerConversion: row.cost_per_conversion as number,
    period: row.period as BudgetAllocation["period"],
  };
}

/**
 * A flow's nodes are its published (else draft) config. Hand-picked flows (autoAssemble off) with
 * listed offers take exactly those; auto-assembled flows take every active offer their candidates
 * node admits, so an offer activated before the flow existed is not missed.
 */
function toFlow(row: CatalogRow): DecisionFlow {
  const nodes = ((obj(row.config).nodes as DecisionFlow["nodes"] | undefined) ?? []).map((n) => ({ ...n }));
  const offerIds = row.offer_ids as string[];
  if (!row.auto_assemble && offerIds.length) {
    const candidates = nodes.find((n) => n.type === "candidates");
    if (candidates && candidates.type === "candidates") candidates.offerIds = offerIds;
    else nodes.unshift({ type: "candidates", offerIds });
  }
  return { id: row.id, name: row.name, nodes };
}

/** Registry status and family come from their columns (a `config` that names them is not read). */
function toModel(row: CatalogRow): ModelConfig {
  return {
    ...obj(row.config),
    id: row.id,
    key: row.key as string,
    type: row.type,
    registryStatus: row.registry_status,
    // Left out when empty, so configurations without families keep their policyVersionHash.
    family: (row.family as string) || undefined,
  } as ModelConfig;
}

/** The content ids the tenant's live creatives name: what the snapshot loads published content for. */
export function contentIdsOf(rows: DecisionConfigRows): string[] {
  return [...new Set(rows.creatives.map((c) => c.content_id as string | null).filter((id): id is string => !!id))];
}

function creativeContent(creatives: CatalogRow[], published: readonly PublishedContent[]): Map<string, PublishedContent> {
  const byId = new Map(published.map((p) => [p.contentId, p]));
  return new Map(creatives.flatMap((c) => (byId.has(c.content_id as string) ? [[c.id, byId.get(c.content_id as string)!] as const] : [])));
}

/**
 * Rows as stored → the core's SnapshotConfig; what no longer validates is left out and named. An
 * active experiment whose champion or a challenger is not a scoring model of the snapshot (archived,
 * deleted, or invalid since) is left out the same way: it covers no decision rather than degrade one.
 */
export function compileTenant(
  rows: DecisionConfigRows,
  settings: SettingsRow,
  logger: Logger,
  experiments: readonly ExperimentSplit[] = [],
  published: readonly PublishedContent[] = [],
): CompiledTenant {
  const skipped: string[] = [];
  const keep = <T>(what: string, value: T, problems: string[]): T[] => {
    if (!problems.length) return [value];
    skipped.push(what);
    logger.warn({ entity: what, problems }, "configuration left out of decisions: it no longer validates");
    return [];
  };
  const byKind = (kind: string) => rows.entries.filter((e) => e.kind === kind);
  const rule = (e: CatalogRow) => ({ id: e.id, name: e.name, ...obj(e.config) });
  const validRules = <T>(kind: string, check: (c: unknown) => string[]) =>
    byKind(kind).flatMap((e) => keep(`${kind} ${e.id}`, rule(e) as T, check(e.config)));

  const config: SnapshotConfig = {
    offers: rows.offers.flatMap((r) => {
      // The reading offer writes were checked with: only a row stored before it can have problems here.
      const { condition, problems, unread } = offerEligibility(r.eligibility);
      const offer = toOffer(r, condition);
      if (unread) {
        // Kept, so that explain=true lists it as refused at eligibility instead of it vanishing.
        logger.warn({ entity: `offer ${r.id}`, problems: [unread] }, "offer refused by every decision: its eligibility is in no language the engine reads");
        return [{ ...offer, eligibilityUnread: unread }];
      }
      return keep(`offer ${r.id}`, offer, problems);
    }),
    creatives: rows.creatives.map((c) => ({
      id: c.id,
      offerId: c.offer_id as string,
      channelId: (c.channel_id as string | null) ?? null,
      placementId: (c.placement_id as string | null) ?? null,
      status: c.status as "active" | "inactive",
    })),
    channels: byKind("channel").map((c) => ({ id: c.id, name: c.name, type: (c.type as string | null) ?? undefined })),
    placements: byKind("placement").map((p) => ({ id: p.id, channelId: (p.channel_id as string | null) ?? null })),
    flows: rows.flows.flatMap((f) => keep(`decision_flow ${f.id}`, toFlow(f), CONFIG_VALIDATORS.decisionFlow(f.config))),
    qualificationRules: [
      ...validRules("qualification_rule", CONFIG_VALIDATORS.qualificationRule),
      ...validRules("decisioning_gate", CONFIG_VALIDATORS.qualificationRule),
    ] as SnapshotConfig["qualificationRules"],
    contactPolicies: validRules("contact_policy", CONFIG_VALIDATORS.contactPolicy),
    guardrails: validRules<Record<string, unknown>>("guardrail_rule", CONFIG_VALIDATORS.guardrailRule).map((g) => ({
      action: "exclude",
      ...g,
    })) as SnapshotConfig["guardrails"],
    rankingProfiles: validRules("ranking_profile", CONFIG_VALIDATORS.rankingProfile),
    constraints: validRules("cross_offer_constraint", CONFIG_VALIDATORS.crossOfferConstraint),
    budgets: rows.budgets.map(toBudget),
    models: rows.models.flatMap((m) => keep(`algorithm_model ${m.id}`, toModel(m), validateModel(toModel(m)))),
    maturityRamp: settings.maturity_ramp_days > 0 ? { rampDays: settings.maturity_ramp_days, startFraction: settings.maturity_ramp_start_fraction } : null,
  };
  const modelKeys = new Map((config.models ?? []).map((m) => [m.id, m.key]));
  const scoring = (e: ExperimentSplit) => [e.championModelId, ...e.challengers.map((c) => c.modelId)].filter((id) => !modelKeys.has(id));
  const named = (list: CatalogRow[], key: (r: CatalogRow) => string) => new Map(list.flatMap((r) => [[r.id, r.id], [key(r), r.id]] as Array<[string, string]>));
  return {
    snapshot: prepareSnapshot(config),
    settings,
    channels: named(byKind("channel"), (r) => r.name),
    placements: named(byKind("placement"), (r) => r.name),
    flows: named(rows.flows, (r) => r.key as string),
    outcomeTypes: new Map(byKind("outcome_type").map((o) => [o.key as string, o.category as string])),
    impressionOutcomes: [...new Set(["impression", ...byKind("outcome_type").filter((o) => o.category === "impression").map((o) => o.key as string)])],
    offerIds: new Set(rows.offers.map((r) => r.id)),
    creatives: new Map((config.creatives ?? []).map((c) => [c.id, c])),
    creativeContent: creativeContent(rows.creatives, published),
    experiments: experiments.flatMap((e) => keep(`experiment ${e.id}`, e, scoring(e).map((id) => `model ${id} is not a scoring model`))),
    modelKeys,
    skipped,
  };
}
