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
 * It goes out on its own channel, else the slot's, else its placement's.
 *
 * A creative does not fit when the channel it would go out on is closed (channel-gate.ts): the
 * customer refused consent for it, whatever the request named, or, in a decision without a channel,
 * one of the channel's caps or budgets is exhausted. A request without a channel, or one spanning
 * channels, has no decision channel for contact policy to check, yet its answer names the
 * creative's channel. The chosen creative carries its channel's reservations, so the service takes
 * that channel's counters with the offer's own.
 *
 * Coupling runs before scoring so no model time is spent on offers that cannot be shown. An offer
 * that fits no slot is rejected at the stage of what closed the channels its creatives would have
 * gone out on (`consent`, else `frequency_cap`, else `contact_policy` for a budget: contact policy's
 * order), `channel` when the request named only a channel, and `coupling` when it named placements.
 */
import type { Channel, Creative, Offer, Placement } from "./catalog.js";
import type { ChannelBlock, ChannelGate } from "./channel-gate.js";
import type { ContactPolicyRow } from "./contact-policy.js";
import type { Reservation } from "./counters.js";
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

/** A choice as coupling makes it: with the channel counters going out there takes, when there are any. */
export interface SlotChoice extends CreativeChoice {
  channelReservations?: readonly Reservation[];
}

/** Per slot index, the choice for an offer, or null when it cannot fill that slot. */
export type SlotOptions = Array<SlotChoice | null>;

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
 * The channel contact policies apply to: the slots' channel when they all share one, else none.
 * Without one, coupling judges each creative's own channel instead (channel-gate.ts).
 */
export function decisionChannel(slots: readonly Slot[], channelsById: ReadonlyMap<string, Channel>): Channel | null {
  const ids = new Set(slots.map((s) => s.channelId));
  if (ids.size !== 1) return null;
  const [id] = ids;
  return id ? (channelsById.get(id) ?? { id }) : null;
}

/** What coupling reads of the catalog. */
export interface CouplingCatalog {
  creativesByOffer: ReadonlyMap<string, readonly Creative[]>;
  /** The channel a creative without one goes out on in a slot without one: its placement's. */
  placementsById: ReadonlyMap<string, Placement>;
}

/**
 * `gate`: null when no channel can be closed (nothing checked). `rows`: an explained decision's
 * contactPolicyResults, which get a blocked row for each offer rejected because its channels were closed.
 */
export function coupleCreatives(
  offers: readonly Offer[],
  catalog: CouplingCatalog,
  slots: readonly Slot[],
  nowMs: number,
  gate: ChannelGate | null = null,
  rows: ContactPolicyRow[] | null = null,
): CouplingOutput {
  const output: CouplingOutput = { coupled: offers, options: [], rejections: [] };
  const coupled = new Subsequence<Offer, SlotOptions>(offers);
  // Offers without creatives (most, in many catalogs) fit the same slots the same way: one list for all.
  let withoutCreatives: SlotOptions | undefined;
  for (let i = 0; i < offers.length; i++) {
    const offer = offers[i];
    const creatives = catalog.creativesByOffer.get(offer.id);
    const live = creatives ? creatives.filter((c) => isLive(c, nowMs)) : null;
    const options = live ? slotOptions(live, slots, catalog.placementsById, gate) : (withoutCreatives ??= slotOptions(NO_CREATIVES, slots, catalog.placementsById, null));
    if (options.some((o) => o !== null)) {
      coupled.keep(i, options);
    } else {
      coupled.drop(i);
      // Would a creative have fitted on an open channel? Then what closed its channels dropped it.
      const block = gate && live ? firstBlock(live, slots, catalog.placementsById, gate) : null;
      if (block) {
        output.rejections.push({ offerId: offer.id, offerName: offer.name, stage: block.stage, reason: block.reason, detail: block.detail });
        rows?.push({ offerId: offer.id, blocked: true, policyId: block.policyId, reason: block.reason });
      } else {
        output.rejections.push(couplingRejection(offer, slots));
      }
    }
  }
  output.coupled = coupled.result();
  output.options = coupled.column();
  return output;
}

/**
 * Every channel a creative of `creatives` could go out on in `slots`, added to `into`: what the
 * channel limits of a decision without a channel will be asked about (counter-keys.ts). A superset
 * (liveness and fit are not checked): reading a counter too many costs nothing, one too few would
 * leave a block to the reservation.
 */
export function outgoingChannels(
  creatives: readonly Creative[],
  slots: readonly Slot[],
  placementsById: ReadonlyMap<string, Placement>,
  into: Set<string>,
): void {
  for (const slot of slots) {
    if (slot.channelId !== null) {
      into.add(slot.channelId);
      continue;
    }
    for (const creative of creatives) {
      const channelId = outgoingChannel(creative, slot, placementsById);
      if (channelId !== null) into.add(channelId);
    }
  }
}

const NO_CREATIVES: readonly Creative[] = Object.freeze([]);

const slotOptions = (live: readonly Creative[], slots: readonly Slot[], placementsById: ReadonlyMap<string, Placement>, gate: ChannelGate | null): SlotOptions =>
  slots.map((slot) => chooseCreative(live, slot, placementsById, gate));

/** The channel a creative goes out on in a slot: its own, else the slot's, else its placement's. */
function outgoingChannel(creative: Creative, slot: Slot, placementsById: ReadonlyMap<string, Placement>): string | null {
  return creative.channelId ?? slot.channelId ?? (creative.placementId ? (placementsById.get(creative.placementId)?.channelId ?? null) : null);
}

function fitsSlot(creative: Creative, slot: Slot): boolean {
  return slot.placementId !== null
    ? creative.placementId === slot.placementId && (!creative.channelId || !slot.channelId || creative.channelId === slot.channelId)
    : slot.channelId === null || creative.channelId === slot.channelId;
}

function chooseCreative(live: readonly Creative[], slot: Slot, placementsById: ReadonlyMap<string, Placement>, gate: ChannelGate | null): SlotChoice | null {
  if (slot.placementId === null && slot.channelId === null && live.length === 0) {
    return { creativeId: null, channelId: null, placementId: null };
  }
  let chosen: Creative | null = null;
  let channelId: string | null = null;
  for (const creative of live) {
    // Only a smaller id than the one chosen can win, so a larger one's channel is never judged.
    if (!fitsSlot(creative, slot) || (chosen !== null && creative.id >= chosen.id)) continue;
    const channel = outgoingChannel(creative, slot, placementsById);
    if (gate !== null && channel !== null && gate.blocked(channel) !== null) continue;
    chosen = creative;
    channelId = channel;
  }
  if (chosen === null) return null;
  const choice: SlotChoice = { creativeId: chosen.id, channelId, placementId: slot.placementId ?? chosen.placementId ?? null };
  const reservations = gate !== null && channelId !== null ? gate.reservations(channelId) : null;
  if (reservations?.length) choice.channelReservations = reservations;
  return choice;
}

/** Contact policy's order, which decides what a rejection names when several things closed channels. */
const BLOCK_ORDER: Record<ChannelBlock["stage"], number> = { consent: 0, frequency_cap: 1, contact_policy: 2 };

/**
 * For an offer no slot could take: the block of a creative that would have fitted on an open
 * channel, or null when none would have. Consent first, then caps, then budgets; among blocks of
 * one kind, the first slot's, and in it the smallest creative id's.
 */
function firstBlock(live: readonly Creative[], slots: readonly Slot[], placementsById: ReadonlyMap<string, Placement>, gate: ChannelGate): ChannelBlock | null {
  let first: { block: ChannelBlock; slot: Slot; creativeId: string } | null = null;
  for (const slot of slots) {
    for (const creative of live) {
      if (!fitsSlot(creative, slot)) continue;
      const channel = outgoingChannel(creative, slot, placementsById);
      const block = channel === null ? null : gate.blocked(channel);
      if (block === null) continue;
      const order = first === null ? -1 : BLOCK_ORDER[block.stage] - BLOCK_ORDER[first.block.stage];
      if (order < 0 || (order === 0 && first!.slot === slot && creative.id < first!.creativeId)) first = { block, slot, creativeId: creative.id };
    }
  }
  return first?.block ?? null;
}

function isLive(creative: Creative, nowMs: number): boolean {
  if ((creative.status ?? "active") !== "active") return false;
  const start = parseInstant(creative.startAt);
  const end = parseInstant(creative.endAt);
  return (start === null || nowMs >= start) && (end === null || nowMs < end);
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
