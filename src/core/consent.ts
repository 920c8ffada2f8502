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
