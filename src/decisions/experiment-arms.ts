import {
  assignVariant,
  coveringExperiment,
  flowScoreNode,
  HOLDOUT_BASELINE_MODEL,
  requestFlow,
  servingModelKey,
  variantModelId,
  variantNames,
  type DecisionInput,
} from "../core/index.js";
import type { VariantAssignments } from "../experiments/variant-assignments.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** The experiment a decision ran under (spec 2.15, 2.16): the response's and the trace's `experiment`. */
export interface ExperimentArm {
  id: string;
  key: string;
  /** __holdout__, __champion__ or a challenger's variant name. */
  variant: string;
  /** The model the variant scores with: the core's model override. */
  modelKey: string;
}

/** The customer's variant given the hash's answer (`assigned`) and the variants that exist. */
type VariantChoice = (tenantId: string, experimentId: string, customerId: string, assigned: string, variants: readonly string[]) => Promise<string>;

/**
 * Puts a decision into its experiment: finds the active experiment covering the request's flow
 * (from the compiled snapshot, never a query; "the model the flow scores with" is its serving
 * model, the family champion when there is one: ADR 6), keeps or makes the customer's variant (Redis, 30
 * days), and names the model the variant scores with: the holdout's is the priority baseline
 * (docs/experiments.md).
 */
export class ExperimentArms {
  constructor(private readonly choose: VariantChoice) {}

  /** Recommend's: the customer keeps the variant (check and keep in one step). */
  static keeping(assignments: Pick<VariantAssignments, "keep">): ExperimentArms {
    return new ExperimentArms((tenantId, experimentId, customerId, assigned, variants) => assignments.keep(tenantId, experimentId, customerId, assigned, variants));
  }

  /** A dry run's: the kept variant when there is one, else the one the customer would get, and nothing kept. */
  static peeking(assignments: Pick<VariantAssignments, "peek">): ExperimentArms {
    return new ExperimentArms(async (tenantId, experimentId, customerId, assigned, variants) => {
      const kept = await assignments.peek(tenantId, experimentId, customerId);
      return kept !== null && variants.includes(kept) ? kept : assigned;
    });
  }

  async assign(tenantId: string, compiled: CompiledTenant, input: Pick<DecisionInput, "flowId" | "customerId">): Promise<ExperimentArm | null> {
    const { snapshot } = compiled;
    if (!compiled.experiments.length) return null;
    const flow = requestFlow(snapshot, input);
    const serving = snapshot.models.get(servingModelKey(snapshot, flowScoreNode(flow).modelKey));
    const experiment = coveringExperiment(compiled.experiments, flow.id, serving?.id);
    if (!experiment) return null;
    const { customerId } = input;
    const variant = await this.choose(tenantId, experiment.id, customerId, assignVariant(experiment, customerId), variantNames(experiment));
    const modelId = variantModelId(experiment, variant);
    // The compiler keeps only experiments whose models all score, so every variant's model has a key.
    const modelKey = modelId === null ? HOLDOUT_BASELINE_MODEL.key : compiled.modelKeys.get(modelId)!;
    return { id: experiment.id, key: experiment.key, variant, modelKey };
  }
}
