/**
 * The compiled per-tenant configuration a decision runs against. The service builds a
 * SnapshotConfig from its stores when configuration changes and compiles it once with
 * `prepareSnapshot`; every decision then reads the same immutable snapshot, and its
 * `policyVersionHash` names exactly which configuration a decision saw (spec 2.16).
 */
import type { Channel, Creative, Offer, Placement } from "./catalog.js";
import { offerBudgetAllocation, type BudgetAllocation } from "./budgets.js";
import { channelLimitsOf, type ChannelLimits } from "./channel-limits.js";
import type { ContactPolicy, ContactPolicyConfig } from "./contact-policy.js";
import type { CrossOfferConstraint } from "./constraints.js";
import { DEFAULT_FLOW, type DecisionFlow } from "./flow.js";
import type { GuardrailRule } from "./guardrails.js";
import { fingerprint } from "./hash.js";
import type { MaturityRamp } from "./maturity-ramp.js";
import type { QualificationRule } from "./qualification.js";
import type { RankingProfile } from "./ranking.js";
import { DEFAULT_MODEL, HOLDOUT_BASELINE_MODEL, type ModelConfig } from "./scoring/models.js";

export interface SnapshotConfig {
  offers: Offer[];
  creatives?: Creative[];
  channels?: Channel[];
  placements?: Placement[];
  flows?: DecisionFlow[];
  /** Flow used when the request names none; else the first flow; else DEFAULT_FLOW. */
  defaultFlowId?: string;
  qualificationRules?: QualificationRule[];
  contactPolicies?: ContactPolicy[];
  budgets?: BudgetAllocation[];
  guardrails?: GuardrailRule[];
  maturityRamp?: MaturityRamp | null;
  rankingProfiles?: RankingProfile[];
  constraints?: CrossOfferConstraint[];
  models?: ModelConfig[];
}

export interface DecisionSnapshot extends ContactPolicyConfig {
  offers: Offer[];
  creativesByOffer: ReadonlyMap<string, Creative[]>;
  channelsById: ReadonlyMap<string, Channel>;
  placementsById: ReadonlyMap<string, Placement>;
  flowsById: ReadonlyMap<string, DecisionFlow>;
  defaultFlow: DecisionFlow;
  qualificationRules: QualificationRule[];
  rankingProfiles: RankingProfile[];
  constraints: CrossOfferConstraint[];
  /**
   * The channel-scoped caps and budgets, which a decision without a channel asks of each creative's
   * channel; null when there are none, so such decisions check nothing more (channel-limits.ts).
   */
  channelLimits: ChannelLimits | null;
  /**
   * By model key; always holds DEFAULT_MODEL for the default flow, and HOLDOUT_BASELINE_MODEL for
   * experiments' holdouts (last, so that no tenant model replaces it).
   */
  models: ReadonlyMap<string, ModelConfig>;
  /** FNV-1a 64 fingerprint of the canonical SnapshotConfig. */
  policyVersionHash: string;
  /** What the snapshot was compiled from: stored once per version, so a trace can be re-run. */
  config: SnapshotConfig;
}

export function prepareSnapshot(config: SnapshotConfig): DecisionSnapshot {
  const flows = config.flows ?? [];
  const creativesByOffer = new Map<string, Creative[]>();
  for (const creative of config.creatives ?? []) {
    const list = creativesByOffer.get(creative.offerId) ?? [];
    list.push(creative);
    creativesByOffer.set(creative.offerId, list);
  }
  const contactPolicies = config.contactPolicies ?? [];
  const budgets = [
    ...(config.budgets ?? []),
    ...config.offers.map(offerBudgetAllocation).filter((b): b is BudgetAllocation => b !== null),
  ];
  return {
    offers: config.offers,
    creativesByOffer,
    channelsById: new Map((config.channels ?? []).map((c) => [c.id, c])),
    placementsById: new Map((config.placements ?? []).map((p) => [p.id, p])),
    flowsById: new Map(flows.map((f) => [f.id, f])),
    defaultFlow: flows.find((f) => f.id === config.defaultFlowId) ?? flows[0] ?? DEFAULT_FLOW,
    qualificationRules: config.qualificationRules ?? [],
    contactPolicies,
    budgets,
    guardrails: config.guardrails ?? [],
    maturityRamp: config.maturityRamp ?? null,
    rankingProfiles: config.rankingProfiles ?? [],
    constraints: config.constraints ?? [],
    channelLimits: channelLimitsOf({ contactPolicies, budgets }),
    models: new Map([
      [DEFAULT_MODEL.key, DEFAULT_MODEL],
      ...(config.models ?? []).map((m): [string, ModelConfig] => [m.key, m]),
      [HOLDOUT_BASELINE_MODEL.key, HOLDOUT_BASELINE_MODEL],
    ]),
    policyVersionHash: fingerprint(config),
    config,
  };
}
