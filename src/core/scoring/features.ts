/**
 * Named numeric features for imported models, read from the same attribute bag as conditions with
 * the offer added as a root (`offer.priority`, `customer.age`, `context.hour`). A name of the form
 * `path=value` is a one-hot indicator: 1 when the attribute equals `value` (compared as text), else
 * 0, so `context.channel=email` works without the caller encoding categories.
 */
import { attributeReader, isMissing, type AttributeBag } from "../attributes.js";
import type { ScoringContext } from "./scorer.js";

/** A feature compiled once per model: its path parsed, and whether it reads the offer. */
export interface FeatureReader {
  /** Whether the value can differ between the candidates of one request (an `offer.` path). */
  readsOffer: boolean;
  /** The feature's number, or undefined when it is missing or not numeric (trees then go `missing`). */
  read(bag: AttributeBag): number | undefined;
}

export function featureReader(name: string, featureMap?: Record<string, string>): FeatureReader {
  const path = featureMap && Object.hasOwn(featureMap, name) ? featureMap[name] : name;
  const readsOffer = path.startsWith("offer.");
  const eq = path.indexOf("=");
  if (eq > 0) {
    const attribute = attributeReader(path.slice(0, eq));
    const expected = path.slice(eq + 1);
    return {
      readsOffer,
      read(bag) {
        const actual = attribute(bag);
        return !isMissing(actual) && String(actual) === expected ? 1 : 0;
      },
    };
  }
  const attribute = attributeReader(path);
  return { readsOffer, read: (bag) => numeric(attribute(bag)) };
}

function numeric(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

/**
 * A model's feature values for a candidate, in one buffer the scorer reuses (scoring is
 * synchronous). A scoring context keeps its customer and request context (ScoringContext), so
 * only `offer.` features are read again from one candidate to the next. NaN marks a missing
 * feature (a tree sends it down its `missing` branch; a linear model counts it as 0).
 */
export function featureVector(features: FeatureReader[]): (context: ScoringContext) => Float64Array {
  const x = new Float64Array(features.length);
  let filledFor: ScoringContext | null = null;
  return (context) => {
    const all = context !== filledFor;
    for (let i = 0; i < features.length; i++) if (all || features[i].readsOffer) x[i] = features[i].read(context.bag) ?? NaN;
    filledFor = context;
    return x;
  };
}
