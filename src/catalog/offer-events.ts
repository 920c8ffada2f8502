import type { Transaction } from "../platform/db.js";
import type { TenantContext } from "../platform/context.js";

export type OfferEventKind = "created" | "status_changed" | "deleted" | "restored";

export interface OfferEvent {
  kind: OfferEventKind;
  offerId: string;
  status: string;
}

/**
 * The extension point for decision-flow auto-assembly (spec 4.3: offer create, status change and
 * delete trigger it). Listeners run inside the offer's transaction, so a flow never sees an offer
 * change that did not commit, and a failing listener rolls the change back.
 */
export type OfferEventListener = (t: Transaction, ctx: TenantContext, event: OfferEvent) => Promise<void>;
