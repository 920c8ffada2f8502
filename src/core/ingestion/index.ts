/** Data ingestion's pure parts: schema fields and values, the pipeline IR, transform expressions. */
export * from "./data-schema.js";
export * from "./expression.js";
export * from "./pipeline-ir.js";
