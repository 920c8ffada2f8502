/**
 * The catalog as the core sees it: the subset of offers (spec 2.4), creatives, channels and
 * placements that decisions read. The service maps stored rows into these shapes when it compiles a
 * snapshot; the core never sees database rows or generated messages.
 */
import type { Condition } from "./conditions.js";
import type { OfferBudget } from "./budgets.js";

export type OfferStatus = "draft" | "active" | "paused" | "archived";

/**
 * When an offer may be shown. `startAt`/`endAt` are ISO instants (start inclusive, end exclusive);
 * `daysOfWeek` lists UTC days (0 = Sunday … 6 = Saturday); `hours` is a UTC hour window
 * [from, to) in 0-24, wrapping past midnight when `from > to` (22 → 6 is overnight).
 */
export interface OfferSchedule {
  startAt?: string;
  endAt?: string;
  daysOfWeek?: number[];
  hours?: { from: number; to: number };
}

export interface Offer {
  id: string;
  name: string;
  status: OfferStatus;
  categoryId?: string | null;
  priority: number;
  businessValue: number;
  mandatory?: boolean;
  mandatoryExpiresAt?: string | null;
  emergencyExcluded?: boolean;
  eligibility?: Condition;
  /**
   * Set when the stored eligibility is in no language the engine reads (offer-eligibility.ts): the
   * offer is stored, but qualification refuses it with this reason rather than guess who qualifies.
   */
  eligibilityUnread?: string;
  schedule?: OfferSchedule;
  budget?: OfferBudget;
  productType?: string | null;
  margin?: number | null;
  revenueValue?: number | null;
  tags?: string[];
  /** Start of the offer's life for the maturity ramp (its creation, or activation if tracked). */
  createdAt: string;
}

/** A creative is live when `status` is active (the default) and `now` is inside its optional window. */
export interface Creative {
  id: string;
  offerId: string;
  channelId?: string | null;
  placementId?: string | null;
  status?: "active" | "inactive";
  startAt?: string | null;
  endAt?: string | null;
}

/** `type` is the free-text kind (`email`, `sms` …) that consent maps usually name. */
export interface Channel {
  id: string;
  name?: string;
  type?: string;
}

export interface Placement {
  id: string;
  channelId?: string | null;
}
