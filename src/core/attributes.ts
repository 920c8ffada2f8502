/**
 * Attribute lookup shared by the condition language and model features, so a path means the same
 * thing in a gate, a guardrail and a logistic-regression coefficient.
 *
 * A bag has named roots (`customer`, `context`, and for features `offer`). A path whose first
 * segment names a root reads inside that root (`context.channel`, `customer.address.city`); any
 * other path reads the customer attributes first and then the request context (`age` is
 * `customer.age` when the customer has it, else `context.age`).
 */

export type Attributes = Record<string, unknown>;

export interface AttributeBag {
  customer: Attributes;
  context: Attributes;
  offer?: Attributes;
}

/**
 * The members of each bag in turn, a later bag's value winning: what `{ ...a, ...b }` gives (an own
 * `__proto__` member stays a member). Spread is not used on the request path: on Node 20's V8 a
 * spread copy that gains members takes a slow path, about 3 µs for two small bags, and what it
 * allocates is promoted to the old generation (docs/performance.md, eleventh session).
 */
export function mergeAttributes<T>(...bags: ReadonlyArray<Readonly<Record<string, T>>>): Record<string, T> {
  const merged: Record<string, T> = {};
  for (const bag of bags) {
    for (const key of Object.keys(bag)) {
      if (key === "__proto__") Object.defineProperty(merged, key, { value: bag[key], enumerable: true, writable: true, configurable: true });
      else merged[key] = bag[key];
    }
  }
  return merged;
}

/** Bare paths are looked up in these roots, in this order. */
const BARE_PATH_ROOTS = ["customer", "context"] as const;

/** The value at `path`, or undefined when any segment is absent. */
export function resolveAttribute(bag: AttributeBag, path: string): unknown {
  return resolveSegments(bag, path.split("."));
}

/** resolveAttribute with the path split once, for a path read many times (model features). */
export function attributeReader(path: string): (bag: AttributeBag) => unknown {
  const segments = path.split(".");
  return (bag) => resolveSegments(bag, segments);
}

function resolveSegments(bag: AttributeBag, segments: readonly string[]): unknown {
  const head = segments[0];
  if (head === "customer" || head === "context" || head === "offer") {
    const root = bag[head];
    if (root !== undefined) return readPath(root, segments, 1);
  }
  for (const root of BARE_PATH_ROOTS) {
    const value = readPath(bag[root], segments, 0);
    if (value !== undefined) return value;
  }
  return undefined;
}

function readPath(root: unknown, segments: readonly string[], from: number): unknown {
  let current: unknown = root;
  for (let i = from; i < segments.length; i++) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[segments[i]];
  }
  return current;
}

/** True when the value counts as absent for `onMissing` purposes. */
export function isMissing(value: unknown): boolean {
  return value === undefined || value === null;
}
