/**
 * Channel coupling: an offer can only go out through a creative made for where it is going.
 *
 * A request fills slots: one per requested placement (in request order), or a single slot when it
 * names none. A slot knows its placement and channel (the request's channel, else the placement's).
 * An offer fits a slot when it has a live creative for it:
 *   - slot with a placement: a creative on that placement whose channel, if set, is the slot's;
 *   - slot with only a channel: a creative on that channel;
 *   - slot with neither: any live creative, or none at all (offers without creatives qualify).
 * Among fitting creatives the one with the smallest id is chosen, so the choice is deterministic.
 *
 * A creative on a channel the customer refused consent for does not fit, whatever the request
 * named: a request without a channel, or one spanning channels, has no decision channel for the
 * contact policies' consent check, yet its answer names the creative's channel.
 *
 * Coupling runs before scoring so no model time is spent on offers that cannot be shown. An offer
 * that fits no slot is rejected with stage `consent` when only refused channels' creatives would
 * have fitted, `channel` when the request named only a channel, and `coupling` when it named
 * placements.
 */
import type { Channel, Creative, Offer, Placement } from "./catalog.js";
import type { ChannelRefusals } from "./consent.js";
import type { Rejection } from "./rejections.js";
import { Subsequence } from "./subsequence.js";
import { parseInstant } from "./time.js";

export interface Slot {
  placementId: string | null;
  channelId: string | null;
}

/** Where an offer would go out in one slot. */
export interface CreativeChoice {
  creativeId: string | null;
  channelId: string | null;
  placementId: string | null;
}

/** Per slot index, the choice for an offer, or null when it cannot fill that slot. */
export type SlotOptions = Array<CreativeChoice | null>;

/** The offers that fit a slot, in their order, and beside them (same index) where each would go. */
export interface CouplingOutput {
  coupled: readonly Offer[];
  options: SlotOptions[];
  rejections: Rejection[];
}

export function decisionSlots(
  placementsById: ReadonlyMap<string, Placement>,
  channelId: string | null | undefined,
  placementIds: readonly string[] | undefined,
): Slot[] {
  if (!placementIds || placementIds.length === 0) return [{ placementId: null, channelId: channelId ?? null }];
  return placementIds.map((id) => ({ placementId: id, channelId: channelId ?? placementsById.get(id)?.channelId ?? null }));
}

/**
 * The channel contact policies apply to: the slots' channel when they all share one, else none (a
 * request spanning channels must name its channel for consent and channel caps to apply).
 */
export function decisionChannel(slots: readonly Slot[], channelsById: ReadonlyMap<string, Channel>): Channel | null {
  const ids = new Set(slots.map((s) => s.channelId));
  if (ids.size !== 1) return null;
  const [id] = ids;
  return id ? (channelsById.get(id) ?? { id }) : null;
}

/** The customer's consent refusals, and the placements whose channel a creative without one goes out on. */
export interface CouplingConsent {
  refusals: ChannelRefusals;
  placementsById: ReadonlyMap<string, Placement>;
}

/** `consent`: null when the customer recorded no consent at all. */
export function coupleCreatives(
  offers: readonly Offer[],
  creativesByOffer: ReadonlyMap<string, readonly Creative[]>,
  slots: readonly Slot[],
  nowMs: number,
  consent: CouplingConsent | null = null,
): CouplingOutput {
  const output: CouplingOutput = { coupled: offers, options: [], rejections: [] };
  const coupled = new Subsequence<Offer, SlotOptions>(offers);
  // Offers without creatives (most, in many catalogs) fit the same slots the same way: one list for all.
  let withoutCreatives: SlotOptions | undefined;
  for (let i = 0; i < offers.length; i++) {
    const offer = offers[i];
    const creatives = creativesByOffer.get(offer.id);
    const live = creatives ? creatives.filter((c) => isLive(c, nowMs)) : null;
    const options = live ? slotOptions(live, slots, consent) : (withoutCreatives ??= slotOptions(NO_CREATIVES, slots, null));
    if (options.some((o) => o !== null)) {
      coupled.keep(i, options);
    } else {
      coupled.drop(i);
      // Had consent not been refused, would a creative have fitted? Then it is consent that dropped it.
      const refusedFit = consent && live ? slotOptions(live, slots, null).find((o) => o !== null) : undefined;
      output.rejections.push(refusedFit ? consentRejection(offer, consent!, refusedFit) : couplingRejection(offer, slots));
    }
  }
  output.coupled = coupled.result();
  output.options = coupled.column();
  return output;
}

const NO_CREATIVES: readonly Creative[] = Object.freeze([]);

const slotOptions = (live: readonly Creative[], slots: readonly Slot[], consent: CouplingConsent | null): SlotOptions =>
  slots.map((slot) => chooseCreative(live, slot, consent));

/** The channel a creative goes out on in a slot: its own, else the slot's, else its placement's. */
function outgoingChannel(creative: Creative, slot: Slot, placementsById: ReadonlyMap<string, Placement>): string | null {
  return creative.channelId ?? slot.channelId ?? (creative.placementId ? (placementsById.get(creative.placementId)?.channelId ?? null) : null);
}

function chooseCreative(live: readonly Creative[], slot: Slot, consent: CouplingConsent | null): CreativeChoice | null {
  if (slot.placementId === null && slot.channelId === null && live.length === 0) {
    return { creativeId: null, channelId: null, placementId: null };
  }
  const fitting = live.filter((c) => {
    const fits =
      slot.placementId !== null
        ? c.placementId === slot.placementId && (!c.channelId || !slot.channelId || c.channelId === slot.channelId)
        : slot.channelId === null || c.channelId === slot.channelId;
    if (!fits || consent === null) return fits;
    const channelId = outgoingChannel(c, slot, consent.placementsById);
    return channelId === null || consent.refusals(channelId) === null;
  });
  if (fitting.length === 0) return null;
  const creative = fitting.reduce((a, b) => (b.id < a.id ? b : a));
  return {
    creativeId: creative.id,
    channelId: creative.channelId ?? slot.channelId,
    placementId: slot.placementId ?? creative.placementId ?? null,
  };
}

function isLive(creative: Creative, nowMs: number): boolean {
  if ((creative.status ?? "active") !== "active") return false;
  const start = parseInstant(creative.startAt);
  const end = parseInstant(creative.endAt);
  return (start === null || nowMs >= start) && (end === null || nowMs < end);
}

/** `fit`: what would have fitted but for consent, so a creative on a refused channel. */
function consentRejection(offer: Offer, consent: CouplingConsent, fit: CreativeChoice): Rejection {
  // The choice names the creative's channel, else the slot's; a placement's channel is the last resort.
  const channelId = (fit.channelId ?? consent.placementsById.get(fit.placementId!)?.channelId)!;
  const consentKey = consent.refusals(channelId)!;
  return {
    offerId: offer.id,
    offerName: offer.name,
    stage: "consent",
    reason: `customer refused consent for channel ${consentKey}`,
    detail: { channelId, consentKey },
  };
}

function couplingRejection(offer: Offer, slots: readonly Slot[]): Rejection {
  const placements = slots.map((s) => s.placementId).filter((p): p is string => p !== null);
  if (placements.length > 0) {
    return {
      offerId: offer.id,
      offerName: offer.name,
      stage: "coupling",
      reason: `no live creative for placement ${placements.join(", ")}`,
      detail: { placementIds: placements },
    };
  }
  return {
    offerId: offer.id,
    offerName: offer.name,
    stage: "channel",
    reason: `no live creative for channel ${slots[0].channelId}`,
    detail: { channelId: slots[0].channelId },
  };
}
