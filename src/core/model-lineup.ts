/**
 * Which models score a decision (docs/models.md, "Serving"): the serving model and the shadow
 * models scored beside it, recorded in the trace only.
 *
 * A score node names a family by naming any model of it: when that model has a family with a
 * champion, the champion serves, so promoting a model changes what flows score with without
 * editing them. A request's override (an experiment's variant) serves as given.
 *
 * Shadows are the node's `shadowModelKeys` plus every registry `shadow` model of the serving
 * model's family: a shadow is compared with the model it would replace, never scored on decisions
 * of unrelated models.
 *
 * Families are optional (spec 4.12): a model without one belongs to the tenant's default family
 * (DEFAULT_MODEL_FAMILY), where a promote without a family puts it. Until 2026-11-28 no model
 * without a family could be a champion or shadow, so this changes no earlier configuration's serving.
 */
import { flowScoreNode, type DecisionFlow } from "./flow.js";
import type { ModelConfig } from "./scoring/models.js";
import type { ScoreTask } from "./scoring/score-candidates.js";
import type { DecisionSnapshot } from "./snapshot.js";

/** The family of every model that names none, and the one a promote without a family moves to. */
export const DEFAULT_MODEL_FAMILY = "default";

export const familyOf = (model: Pick<ModelConfig, "family">): string => model.family || DEFAULT_MODEL_FAMILY;

interface FamilyLineup {
  champion?: string;
  shadows: string[];
}

/** Per snapshot (immutable until the configuration changes): family → champion and shadow keys. */
const lineups = new WeakMap<ReadonlyMap<string, ModelConfig>, Map<string, FamilyLineup>>();

function familyLineups(models: ReadonlyMap<string, ModelConfig>): Map<string, FamilyLineup> {
  let byFamily = lineups.get(models);
  if (byFamily) return byFamily;
  byFamily = new Map();
  for (const m of models.values()) {
    if (m.registryStatus !== "champion" && m.registryStatus !== "shadow") continue;
    const lineup = byFamily.get(familyOf(m)) ?? { shadows: [] };
    if (m.registryStatus === "champion") lineup.champion = m.key;
    else lineup.shadows.push(m.key);
    byFamily.set(familyOf(m), lineup);
  }
  lineups.set(models, byFamily);
  return byFamily;
}

/** The model a score node naming `namedKey` scores with: its family's champion, else the named model. */
export function servingModelKey(snapshot: DecisionSnapshot, namedKey: string): string {
  const named = snapshot.models.get(namedKey);
  return (named && familyLineups(snapshot.models).get(familyOf(named))?.champion) || namedKey;
}

/** The serving model (the override, else the node's model resolved to its champion) and its shadows. */
export function scoringModelKeys(snapshot: DecisionSnapshot, flow: DecisionFlow, override?: string): { modelKey: string; shadowModelKeys: string[] } {
  const scoreNode = flowScoreNode(flow);
  const modelKey = override ?? servingModelKey(snapshot, scoreNode.modelKey);
  const serving = snapshot.models.get(modelKey);
  const registryShadows = serving ? (familyLineups(snapshot.models).get(familyOf(serving))?.shadows ?? []) : [];
  const shadowModelKeys = [...new Set([...(scoreNode.shadowModelKeys ?? []), ...registryShadows])].filter((key) => key !== modelKey);
  return { modelKey, shadowModelKeys };
}

/**
 * Ids of the models a scored decision ran (serving model first, then shadows): what the registry's
 * rollback guard counts as their scored decisions. Empty when no candidate reached scoring.
 */
export function scoredModelIds(task: Pick<ScoreTask, "candidates" | "models" | "modelKey" | "shadowModelKeys">): string[] {
  if (!task.candidates.length) return [];
  return [task.modelKey, ...task.shadowModelKeys].flatMap((key) => (task.models[key] ? [task.models[key].id] : []));
}
