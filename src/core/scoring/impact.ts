/**
 * The impact of an offer and the CLV tilt of spec 4.14, shared by the formula model and ranking
 * profiles so both tilt by the same rule.
 *
 *   impact = 1 + margin · revenue / (revenue + revenueScale)
 *
 * with `margin` the offer's margin as a fraction clamped to [0, 1] (1 when unset) and `revenue` its
 * revenueValue (0 when unset or negative). Impact lies in [1, 2): 1 for an offer that earns
 * nothing, approaching 2 for a high-margin, high-revenue one. Being at least 1 makes the tilt
 * `score · impact^(clvWeight · clvScore / 100)` favour valuable offers for valuable customers and
 * leave zero-impact offers untouched.
 */
export const DEFAULT_REVENUE_SCALE = 100;

export interface ImpactInputs {
  margin?: number | null;
  revenueValue?: number | null;
}

/** The CLV fields the core reads (spec 2.10); null when the customer has no CLV record. */
export interface ClvInput {
  clvScore: number;
}

export function offerImpact(offer: ImpactInputs, revenueScale = DEFAULT_REVENUE_SCALE): number {
  const margin = Math.min(1, Math.max(0, offer.margin ?? 1));
  const revenue = Math.max(0, offer.revenueValue ?? 0);
  return revenue === 0 ? 1 : 1 + (margin * revenue) / (revenue + revenueScale);
}

/** The tilted score; unchanged without a CLV record or with a zero weight. */
export function clvTilt(score: number, impact: number, clvWeight: number, clv: ClvInput | null): number {
  if (!clv || clvWeight === 0) return score;
  return score * Math.pow(impact, (clvWeight * clv.clvScore) / 100);
}
