/**
 * What channel coupling asks of the channel a creative would go out on: may it go out there, and
 * what does going out there consume?
 *
 * Two things can close a channel. The customer's consent refusal closes it whatever the request
 * named (a decision with a channel has already dropped every offer on a refused one in contact
 * policy; this catches the channels a channel-less decision reaches through its creatives). An
 * exhausted channel cap or budget closes it only for a decision without a channel: with one,
 * contact policy has checked that channel's limits for every offer, and every creative coupling
 * chooses goes out on it. A channel is judged in contact policy's order, consent before caps before
 * budgets, and its first block is its answer.
 */
import type { Attributes } from "./attributes.js";
import type { Channel } from "./catalog.js";
import { channelLimitChecks, type ChannelLimits } from "./channel-limits.js";
import { channelRefusals } from "./consent.js";
import { CONTACT_CHECKS } from "./contact-policy.js";
import { admits, counterLabel, counterStage, reservationsOf, type Reservation } from "./counters.js";
import type { RejectionStage } from "./rejections.js";

/** Why a creative may not go out on a channel; `detail` is its rejection's, naming the channel. */
export interface ChannelBlock {
  stage: Extract<RejectionStage, "consent" | "frequency_cap" | "contact_policy">;
  policyId: string;
  reason: string;
  detail: Record<string, unknown>;
}

export interface ChannelGate {
  /** The channel's first block, or null when a creative may go out on it. */
  blocked(channelId: string): ChannelBlock | null;
  /** The channel caps' and budgets' counters going out on the channel consumes (often none). */
  reservations(channelId: string): readonly Reservation[];
}

/** The part of a decision's input the gate reads. */
export interface ChannelGateInput {
  customerId: string;
  customer: Attributes;
  counters?: Readonly<Record<string, number>>;
}

const NO_RESERVATIONS: readonly Reservation[] = Object.freeze([]);
const NO_COUNTERS: Readonly<Record<string, number>> = Object.freeze({});

/**
 * The gate of one decision, or null when nothing can close a channel (the customer recorded no
 * consent, and the decision has a channel or the tenant no channel limits): then coupling checks
 * nothing and allocates nothing. Each channel is judged once per decision.
 */
export function channelGate(
  snapshot: { channelsById: ReadonlyMap<string, Channel>; channelLimits: ChannelLimits | null },
  input: ChannelGateInput,
  decisionChannel: Channel | null,
  nowMs: number,
): ChannelGate | null {
  const refusals = channelRefusals(input.customer, snapshot.channelsById);
  const limits = decisionChannel === null ? snapshot.channelLimits : null;
  if (!refusals && !limits) return null;
  const counters = input.counters ?? NO_COUNTERS;
  const judged = new Map<string, { block: ChannelBlock | null; reservations: readonly Reservation[] }>();
  const judge = (channelId: string) => {
    let verdict = judged.get(channelId);
    if (verdict) return verdict;
    const consentKey = refusals?.(channelId) ?? null;
    const checks = limits ? channelLimitChecks(limits, input.customerId, channelId, nowMs) : [];
    let block: ChannelBlock | null = null;
    if (consentKey !== null) {
      block = {
        stage: "consent",
        policyId: CONTACT_CHECKS.consent,
        reason: `customer refused consent for channel ${consentKey}`,
        detail: { channelId, consentKey },
      };
    } else {
      const exhausted = checks.find((check) => !admits(check, counters));
      if (exhausted) {
        const current = counters[exhausted.key] ?? 0;
        block = {
          stage: counterStage(exhausted),
          policyId: exhausted.policyId,
          reason: `${counterLabel(exhausted)} exhausted on channel ${channelId}: ${current}/${exhausted.limit}`,
          detail: { policyId: exhausted.policyId, channelId, key: exhausted.key, current, limit: exhausted.limit },
        };
      }
    }
    verdict = { block, reservations: checks.length ? reservationsOf(checks) : NO_RESERVATIONS };
    judged.set(channelId, verdict);
    return verdict;
  };
  return {
    blocked: (channelId) => judge(channelId).block,
    reservations: (channelId) => judge(channelId).reservations,
  };
}
