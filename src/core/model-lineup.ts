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
 * of unrelated models. A model without a family has no registry shadows.
 */
import { flowScoreNode, type DecisionFlow } from "./flow.js";
import type { ModelConfig } from "./scoring/models.js";
import type { ScoreTask } from "./scoring/score-candidates.js";
import type { DecisionSnapshot } from "./snapshot.js";

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
    if (!m.family || (m.registryStatus !== "champion" && m.registryStatus !== "shadow")) continue;
    const lineup = byFamily.get(m.family) ?? { shadows: [] };
    if (m.registryStatus === "champion") lineup.champion = m.key;
    else lineup.shadows.push(m.key);
    byFamily.set(m.family, lineup);
  }
  lineups.set(models, byFamily);
  return byFamily;
}

/** The model a score node naming `namedKey` scores with: its family's champion, else the named model. */
export function servingModelKey(snapshot: DecisionSnapshot, namedKey: string): string {
  const family = snapshot.models.get(namedKey)?.family;
  return (family && familyLineups(snapshot.models).get(family)?.champion) || namedKey;
}

/** The serving model (the override, else the node's model resolved to its champion) and its shadows. */
export function scoringModelKeys(snapshot: DecisionSnapshot, flow: DecisionFlow, override?: string): { modelKey: string; shadowModelKeys: string[] } {
  const scoreNode = flowScoreNode(flow);
  const modelKey = override ?? servingModelKey(snapshot, scoreNode.modelKey);
  const family = snapshot.models.get(modelKey)?.family;
  const registryShadows = family ? (familyLineups(snapshot.models).get(family)?.shadows ?? []) : [];
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
