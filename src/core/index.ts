/**
 * The pure decision core: the one module services and workers import. It imports nothing outside
 * src/core, reads no clock and does no I/O, so it runs identically in-process, in a worker thread
 * and in tests (docs/decisioning-core.md).
 */
export * from "./alert-rules.js";
export * from "./attributes.js";
export * from "./bounded-map.js";
export * from "./budgets.js";
export * from "./canonical-json.js";
export * from "./catalog.js";
export * from "./channel-coupling.js";
export * from "./channel-gate.js";
export * from "./channel-limits.js";
export * from "./clv.js";
export * from "./conditions.js";
export * from "./config-validation.js";
export * from "./config-references.js";
export * from "./consent.js";
export * from "./constraints.js";
export * from "./content-workflow.js";
export * from "./contact-policy.js";
export * from "./counter-keys.js";
export * from "./counters.js";
export * from "./decide.js";
export * from "./distributions.js";
export * from "./evidence.js";
export * from "./experiment-assignment.js";
export * from "./experiment-results.js";
export * from "./experiment-statistics.js";
export * from "./flow.js";
export * from "./frequency-caps.js";
export * from "./guardrails.js";
export * from "./hash.js";
export * from "./maturity-ramp.js";
export * from "./model-lineup.js";
export * from "./offer-scope.js";
export * from "./qualification.js";
export * from "./random.js";
export * from "./ranking.js";
export * from "./registry-moves.js";
export * from "./rejections.js";
export * from "./request-scope.js";
export * from "./schedule.js";
export * from "./snapshot.js";
export * from "./suppression.js";
export * from "./time.js";
export * from "./char-count.js";
export * from "./scoring/index.js";
export * from "./explain/tree-shap.js";
export * from "./explain/decision-shap.js";
export * from "./import-rewiring.js";
export * from "./approval-stages.js";
export * from "./segment-membership.js";
export * from "./ingestion/index.js";
