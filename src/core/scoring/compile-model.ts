/**
 * One entry point from a model configuration to a scorer, so validation on write (services
 * rejecting a bad import with a 400) and compilation at scoring time cannot disagree.
 */
import { compileAdaptive } from "./adaptive.js";
import { compileFormula } from "./formula.js";
import { compileGradientBoosted } from "./gradient-boosted.js";
import { compileLogisticRegression } from "./logistic-regression.js";
import type { ModelConfig } from "./models.js";
import type { Compiled } from "./scorer.js";

export function compileModel(model: ModelConfig): Compiled {
  if (model === null || typeof model !== "object") return { errors: ["model: must be an object"] };
  switch (model.type) {
    case "adaptive":
      return compileAdaptive(model);
    case "formula":
      return compileFormula(model);
    case "logistic_regression":
      return compileLogisticRegression(model);
    case "gradient_boosted":
      return compileGradientBoosted(model);
    default:
      return { errors: [`model.type: unknown model type ${String((model as { type?: unknown }).type)}`] };
  }
}

/** Every problem with a model configuration as `<path>: <message>`; empty when it compiles. */
export function validateModel(model: ModelConfig): string[] {
  return compileModel(model).errors ?? [];
}
