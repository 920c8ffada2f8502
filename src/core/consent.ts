/**
 * Channel consent: the customer attribute `consent` maps channels to booleans, and an explicit
 * `false` for the decision's channel blocks every offer on it. The map may name the channel by id,
 * by type (`email`) or by name, because customer data usually knows only the kind of channel.
 * Absent entries mean no objection: consent collection is the tenant's business, the core only
 * honours recorded refusals.
 */
import type { Attributes } from "./attributes.js";
import type { Channel } from "./catalog.js";

/** The consent key that refuses `channel`, or null when the customer has not refused it. */
export function consentRefusal(customer: Attributes, channel: Channel): string | null {
  const consent = customer.consent;
  if (consent === null || typeof consent !== "object") return null;
  const map = consent as Record<string, unknown>;
  for (const key of [channel.id, channel.type, channel.name]) {
    if (key !== undefined && map[key] === false) return key;
  }
  return null;
}

/** Whether the customer refused a channel, by channel id: the consent key that refuses it, or null. */
export type ChannelRefusals = (channelId: string) => string | null;

/**
 * The customer's refusals as a check by channel id, answered once per channel, or null when the
 * customer has recorded no consent at all (most customers: nothing to check, nothing allocated).
 */
export function channelRefusals(customer: Attributes, channelsById: ReadonlyMap<string, Channel>): ChannelRefusals | null {
  const consent = customer.consent;
  if (consent === null || typeof consent !== "object") return null;
  const known = new Map<string, string | null>();
  return (channelId) => {
    let key = known.get(channelId);
    if (key === undefined) known.set(channelId, (key = consentRefusal(customer, channelsById.get(channelId) ?? { id: channelId })));
    return key;
  };
}
