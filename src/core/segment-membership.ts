/**
 * Catalog segments as profile membership (docs/unified-profile.md): a segment is a condition in the
 * language of offers' eligibility over the customer's stored attributes. Membership is a function
 * of the attributes and the segment's condition, so it has held without a break at least since the
 * later of the last write of either; that instant is `memberSince`.
 */
import { matchCondition, type Condition } from "./conditions.js";

export interface SegmentDefinition {
  id: string;
  name: string;
  condition: Condition;
  /** When the segment (its condition) was last written, epoch ms. */
  definedAt: number;
}

export interface SegmentMembership {
  segmentId: string;
  segmentName: string;
  memberSince: number;
}

/**
 * The segments the attributes match, in the order given. A condition over an attribute the customer
 * lacks does not match (no membership on missing data). `attributesSince`: when the attributes were
 * last written, epoch ms.
 */
export function segmentMemberships(
  segments: readonly SegmentDefinition[],
  attributes: Record<string, unknown>,
  attributesSince: number,
  nowMs: number,
): SegmentMembership[] {
  const bag = { customer: attributes, context: {} };
  return segments
    .filter((s) => matchCondition(s.condition, bag, nowMs).value === true)
    .map((s) => ({ segmentId: s.id, segmentName: s.name, memberSince: Math.max(attributesSince, s.definedAt) }));
}
