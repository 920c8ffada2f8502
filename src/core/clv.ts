/**
 * Customer lifetime value from RFM (spec 2.10, 4.14; formulas and thresholds in docs/clv.md). Pure, so
 * the formulas are tested on hand-computed cases and the same numbers come out of every process.
 *
 *   recency R     = whole days since the last interaction (0 for one today)
 *   frequency F   = impressions shown to the customer
 *   monetary M    = total conversion value of the customer's outcomes
 *   churn p       = R / (R + CHURN_HALF_LIFE_DAYS)            0 today, 0.5 at 90 days, → 1
 *   tenure T      = max(1, (last − first interaction) / 30 days) in months
 *   revenue       = (M / T) · 24 · (1 − p)                    monthly value over a 24-month lifespan, kept while retained
 *   score         = round(100 · (0.2 · (1 − p) + 0.3 · F/(F + 20) + 0.5 · M/(M + 500)))
 *   segment       = at_risk when p ≥ 0.6 and the customer ever converted or saw offers; else high (score ≥ 60),
 *                   medium (≥ 30), low
 */
import { MS_PER_DAY } from "./time.js";

export const CLV_SEGMENTS = ["high", "medium", "low", "at_risk"] as const;
export type ClvSegment = (typeof CLV_SEGMENTS)[number];

export const CLV_LIFESPAN_MONTHS = 24;
export const CHURN_HALF_LIFE_DAYS = 90;
export const FREQUENCY_SCALE = 20;
export const MONETARY_SCALE = 500;
export const AT_RISK_CHURN = 0.6;
export const HIGH_SCORE = 60;
export const MEDIUM_SCORE = 30;
const DAYS_PER_MONTH = 30;
const WEIGHTS = { retention: 0.2, frequency: 0.3, monetary: 0.5 } as const;

/** What the tenant's interactions say about one customer. */
export interface RfmFacts {
  /** Epoch ms of the first and last interaction; the customer record's creation for a customer without any. */
  firstAt: number;
  lastAt: number;
  impressions: number;
  conversionValue: number;
}

/**
 * Folds the customer's inbound events (spec 4.17) into the facts: an event is activity, so it moves
 * the first and last seen (recency, tenure), never impressions or value. A customer known only by
 * events gets facts with zero impressions and value.
 */
export function withEventActivity(facts: RfmFacts | undefined, events: { firstAt: number; lastAt: number } | undefined): RfmFacts | undefined {
  if (!events) return facts;
  if (!facts) return { firstAt: events.firstAt, lastAt: events.lastAt, impressions: 0, conversionValue: 0 };
  return { ...facts, firstAt: Math.min(facts.firstAt, events.firstAt), lastAt: Math.max(facts.lastAt, events.lastAt) };
}

export interface ClvResult {
  clvScore: number;
  predictedRevenue: number;
  churnProbability: number;
  rfmRecency: number;
  rfmFrequency: number;
  rfmMonetary: number;
  segment: ClvSegment;
}

export function isClvSegment(value: string): value is ClvSegment {
  return (CLV_SEGMENTS as readonly string[]).includes(value);
}

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;

export function computeClv(facts: RfmFacts, nowMs: number): ClvResult {
  const recency = Math.max(0, Math.floor((nowMs - facts.lastAt) / MS_PER_DAY));
  const frequency = Math.max(0, facts.impressions);
  const monetary = Math.max(0, facts.conversionValue);
  const churn = recency / (recency + CHURN_HALF_LIFE_DAYS);
  const tenureMonths = Math.max(1, (facts.lastAt - facts.firstAt) / (DAYS_PER_MONTH * MS_PER_DAY));
  const predictedRevenue = (monetary / tenureMonths) * CLV_LIFESPAN_MONTHS * (1 - churn);
  const clvScore = Math.round(
    100 *
      (WEIGHTS.retention * (1 - churn) +
        WEIGHTS.frequency * (frequency / (frequency + FREQUENCY_SCALE)) +
        WEIGHTS.monetary * (monetary / (monetary + MONETARY_SCALE))),
  );
  const engaged = frequency > 0 || monetary > 0;
  const segment: ClvSegment =
    engaged && churn >= AT_RISK_CHURN ? "at_risk" : clvScore >= HIGH_SCORE ? "high" : clvScore >= MEDIUM_SCORE ? "medium" : "low";
  return {
    clvScore,
    predictedRevenue: round(predictedRevenue, 2),
    churnProbability: round(churn, 4),
    rfmRecency: recency,
    rfmFrequency: frequency,
    rfmMonetary: round(monetary, 2),
    segment,
  };
}
