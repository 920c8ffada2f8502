/**
 * The model registry's rules (spec 3.3, docs/models.md) as pure functions: which moves are legal,
 * and when the rollback guard refuses one. The service gathers the facts inside its transaction
 * and asks these; tests drive them by table.
 */
import type { RegistryStatus } from "./scoring/models.js";

export const REGISTRY_STATES: readonly RegistryStatus[] = ["draft", "shadow", "challenger", "champion", "archived"];

/**
 * Legal moves, from → allowed targets. A model is staged (shadow or challenger) before it serves,
 * so a draft never becomes champion in one step; a champion steps down to challenger or shadow (or
 * is archived), never back to draft; an archived model comes back only as a draft. A move to the
 * status a model already has is not a move.
 */
export const REGISTRY_MOVES: Readonly<Record<RegistryStatus, readonly RegistryStatus[]>> = {
  draft: ["shadow", "challenger", "archived"],
  shadow: ["draft", "challenger", "champion", "archived"],
  challenger: ["draft", "shadow", "champion", "archived"],
  champion: ["shadow", "challenger", "archived"],
  archived: ["draft"],
};

/** Statuses in which a model takes part in a family, so it must have one. */
export const FAMILY_STATUSES: readonly RegistryStatus[] = ["shadow", "challenger", "champion"];

/** What the old champion becomes when another model of its family is promoted to champion. */
export const DEMOTED_CHAMPION_STATUS: RegistryStatus = "challenger";

/** Replacing a champion needs a successor scored on at least this many decisions (MODEL_PROMOTION_MIN_DECISIONS). */
export const DEFAULT_MIN_SCORED_DECISIONS = 100;

export function isRegistryStatus(value: string): value is RegistryStatus {
  return (REGISTRY_STATES as readonly string[]).includes(value);
}

export function isLegalMove(from: RegistryStatus, to: RegistryStatus): boolean {
  return REGISTRY_MOVES[from].includes(to);
}

/** A live decision flow and the model keys its score node names (modelKey, then shadowModelKeys). */
export interface FlowModelUse {
  flowId: string;
  flowName: string;
  modelKey: string;
  shadowModelKeys: readonly string[];
}

/** Everything the guard looks at, gathered by the service under the tenant's write lock. */
export interface GuardFacts {
  model: { key: string; family: string; status: RegistryStatus };
  to: RegistryStatus;
  /** The family after the move (the promotion's, else the model's). */
  family: string;
  /** The other live champion of `family`, which a move to champion replaces. */
  incumbentChampion: { key: string } | null;
  /** Decisions the model scored, counted up to `minScoredDecisions` (more is not needed). */
  scoredDecisions: number;
  minScoredDecisions: number;
  /** Active flows with their score nodes (published configuration). */
  flows: readonly FlowModelUse[];
  /** Family of each live model key of the tenant. */
  familyOfKey: ReadonlyMap<string, string>;
}

export type GuardRule = "FAMILY_LEFT_WITHOUT_CHAMPION" | "MODEL_NAMED_BY_FLOW" | "UNPROVEN_SUCCESSOR";

export interface GuardTrip {
  rule: GuardRule;
  message: string;
}

/**
 * The rollback guard: the moves that could break or silently degrade live decisioning.
 * - FAMILY_LEFT_WITHOUT_CHAMPION: the champion steps down (to anything but champion) while an active
 *   flow scores with its family; the family's decisions would fall back to whatever model the flow
 *   names. Promote a successor instead, which demotes the champion in the same move.
 * - MODEL_NAMED_BY_FLOW: archiving a model an active flow's score node names (as its model or a
 *   shadow); archived models leave the decision snapshot, so the flow would score degraded.
 * - UNPROVEN_SUCCESSOR: a model replaces a champion with fewer than `minScoredDecisions` scored
 *   decisions (as the serving model, e.g. an experiment's challenger, or as a shadow).
 */
export function rollbackGuard(f: GuardFacts): GuardTrip[] {
  const trips: GuardTrip[] = [];
  if (f.model.status === "champion" && f.to !== "champion") {
    const users = f.flows.filter((flow) => f.familyOfKey.get(flow.modelKey) === f.model.family);
    if (users.length) {
      trips.push({
        rule: "FAMILY_LEFT_WITHOUT_CHAMPION",
        message: `${f.model.key} is the only champion of family "${f.model.family}", which active flows score with (${names(users)}); promote its successor instead`,
      });
    }
  }
  if (f.to === "archived") {
    const users = f.flows.filter((flow) => flow.modelKey === f.model.key || flow.shadowModelKeys.includes(f.model.key));
    if (users.length) {
      trips.push({ rule: "MODEL_NAMED_BY_FLOW", message: `active flows name ${f.model.key} in their score node (${names(users)})` });
    }
  }
  if (f.to === "champion" && f.incumbentChampion && f.scoredDecisions < f.minScoredDecisions) {
    trips.push({
      rule: "UNPROVEN_SUCCESSOR",
      message: `${f.model.key} has scored ${f.scoredDecisions} decisions, fewer than the ${f.minScoredDecisions} needed to replace champion ${f.incumbentChampion.key}`,
    });
  }
  return trips;
}

function names(flows: readonly FlowModelUse[]): string {
  return flows.map((f) => f.flowName).join(", ");
}
