/**
 * One byte-exact JSON text per value, so equal inputs hash equally whatever order their keys were
 * built in: object keys sorted by code unit, `undefined` members dropped (as JSON.stringify does),
 * non-finite numbers written as null, values with `toJSON` (dates) written as what it returns, as
 * JSON.stringify does, no whitespace.
 *
 * Native JSON.stringify does the writing, over the value with every object's members put in
 * sorted order (a copy only where they were not): a trace hashes a few hundred values per
 * decision, and a writer in JavaScript cost several times as much. Objects enumerate integer-like
 * keys ("2", "10") numerically before the others, which is not code-unit order, so a value with
 * such a key is written member by member instead.
 */
export function canonicalJson(value: unknown): string {
  const ordered = sortedMembers(value);
  return ordered === INTEGER_KEYS ? written(value) : (JSON.stringify(ordered) ?? "null");
}

const INTEGER_KEYS = Symbol("integer-like keys");
const isIntegerLike = (key: string) => /^(0|[1-9]\d*)$/.test(key);

/** `value` with its objects' members in code-unit order, sharing every part already in order. */
function sortedMembers(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return sortedMembers((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (item === null || typeof item !== "object") continue;
      const ordered = sortedMembers(item);
      if (ordered === INTEGER_KEYS) return INTEGER_KEYS;
      if (ordered !== item) (copy ??= value.slice())[i] = ordered;
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let inOrder = true;
  let changed = false;
  const members: unknown[] = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    if (isIntegerLike(keys[i])) return INTEGER_KEYS;
    if (i > 0 && keys[i - 1] > keys[i]) inOrder = false;
    const member = record[keys[i]];
    const ordered = member === null || typeof member !== "object" ? member : sortedMembers(member);
    if (ordered === INTEGER_KEYS) return INTEGER_KEYS;
    if (ordered !== member) changed = true;
    members[i] = ordered;
  }
  if (inOrder && !changed) return value;
  const order = keys.map((_, i) => i);
  if (!inOrder) order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : 0));
  const copy: Record<string, unknown> = {};
  for (const i of order) copy[keys[i]] = members[i];
  return copy;
}

/** The same text written member by member (values with integer-like keys). */
function written(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") return written((value as { toJSON(): unknown }).toJSON());
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "boolean":
    case "string":
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined || typeof v === "function" ? "null" : written(v))).join(",")}]`;
      const entries = Object.keys(value)
        .filter((k) => {
          const v = (value as Record<string, unknown>)[k];
          return v !== undefined && typeof v !== "function" && typeof v !== "symbol";
        })
        .sort()
        .map((k) => `${JSON.stringify(k)}:${written((value as Record<string, unknown>)[k])}`);
      return `{${entries.join(",")}}`;
    }
    default:
      return "null";
  }
}
