/**
 * Named numeric features for imported models, read from the same attribute bag as conditions with
 * the offer added as a root (`offer.priority`, `customer.age`, `context.hour`). A name of the form
 * `path=value` is a one-hot indicator: 1 when the attribute equals `value` (compared as text), else
 * 0, so `context.channel=email` works without the caller encoding categories.
 */
import { isMissing, resolveAttribute, type AttributeBag } from "../attributes.js";

/** The feature's number, or undefined when it is missing or not numeric (trees then go `missing`). */
export function featureValue(bag: AttributeBag, name: string, featureMap?: Record<string, string>): number | undefined {
  const path = featureMap && Object.hasOwn(featureMap, name) ? featureMap[name] : name;
  const eq = path.indexOf("=");
  if (eq > 0) {
    const actual = resolveAttribute(bag, path.slice(0, eq));
    return !isMissing(actual) && String(actual) === path.slice(eq + 1) ? 1 : 0;
  }
  const value = resolveAttribute(bag, path);
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}
