/**
 * Maturity ramp: a new offer reaches a growing share of customers instead of everyone on day one,
 * so a bad launch hurts few. During its first `rampDays` an offer is shown only to customers whose
 * hash fraction (FNV-1a of `<offerId>:<customerId>`, uniform in [0, 1)) is below
 * `startFraction + (1 - startFraction) * ageDays / rampDays`. The hash is per offer, so the same
 * customers are not always the guinea pigs, and per customer, so one customer's answer is stable
 * and only ever turns from no to yes as the ramp grows.
 */
import type { Offer } from "./catalog.js";
import { hashFraction } from "./hash.js";
import { MS_PER_DAY, requireInstant } from "./time.js";

export interface MaturityRamp {
  rampDays: number;
  /** Share of customers admitted on day zero; default DEFAULT_RAMP_START_FRACTION. */
  startFraction?: number;
}

export const DEFAULT_RAMP_START_FRACTION = 0.1;

export interface RampVerdict {
  admitted: boolean;
  /** Share of customers the offer reaches today (1 once mature). */
  fraction: number;
  /** This customer's position in [0, 1). */
  position: number;
}

export function rampVerdict(ramp: MaturityRamp, offer: Offer, customerId: string, nowMs: number): RampVerdict {
  const ageDays = (nowMs - requireInstant(offer.createdAt, `offer ${offer.id} createdAt`)) / MS_PER_DAY;
  const start = ramp.startFraction ?? DEFAULT_RAMP_START_FRACTION;
  const fraction = ramp.rampDays <= 0 || ageDays >= ramp.rampDays ? 1 : start + ((1 - start) * Math.max(0, ageDays)) / ramp.rampDays;
  const position = hashFraction(`${offer.id}:${customerId}`);
  return { admitted: position < fraction, fraction, position };
}
