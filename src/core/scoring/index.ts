/** Stage 3, scoring: models, the task the worker runs, and the inline-or-pool choice. */
export * from "./adaptive.js";
export * from "./beta.js";
export * from "./compile-model.js";
export * from "./evidence-counts.js";
export * from "./features.js";
export * from "./formula.js";
export * from "./gradient-boosted.js";
export * from "./impact.js";
export * from "./link.js";
export * from "./logistic-regression.js";
export * from "./models.js";
export * from "./pooled-task.js";
export * from "./score-candidates.js";
export * from "./scorer.js";
export * from "./scoring-path.js";
