/**
 * How an imported row stops pointing into its source tenant (docs/portability.md, "References").
 * Ids are UUIDs, unique across tenants, so every string anywhere in the row that equals an
 * imported row's old id is that reference and becomes the new id. Keys are short words that may
 * also be plain values, so they are rewired only under JSON properties named `...Key` or `...Keys`
 * (a flow's score node: `modelKey`, `shadowModelKeys`). References by key or name under other
 * properties (a pipeline IR's `connector`, `schema`, `flowId`, a journey step's `flow`) are rewired by
 * their kind, which knows where they are (`rewireKeys` in portability/exportable-kinds.ts).
 */
export interface Rewiring {
  ids: ReadonlyMap<string, string>;
  keys: ReadonlyMap<string, string>;
}

export function rewire(value: unknown, map: Rewiring, underKey = false): unknown {
  if (typeof value === "string") return map.ids.get(value) ?? (underKey ? map.keys.get(value) : undefined) ?? value;
  if (Array.isArray(value)) return value.map((v) => rewire(v, map, underKey));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewire(v, map, /keys?$/i.test(k) && k !== "key" ? true : false)]));
  }
  return value;
}

/** `value` shortened (to at least one character) so that `value` + `tail` fits `maxLength`. */
const withTail = (value: string, tail: string, maxLength: number) => `${value.slice(0, Math.max(1, maxLength - tail.length))}${tail}`;

/** `<key>-imported-<suffix>`, the key shortened so that the result fits `maxLength`. */
export function importedKey(key: string, suffix: string, maxLength = 64): string {
  return withTail(key, `-imported-${suffix}`, maxLength);
}

/**
 * `<name>_imported_<suffix>`: the imported key of a name under identifier rules (letters, digits and
 * underscores; a data schema's name, which becomes its table's), shortened to fit `maxLength`.
 */
export function importedIdentifier(name: string, suffix: string, maxLength: number): string {
  return withTail(name, `_imported_${suffix}`, maxLength);
}

/** `<name> (imported)`, the name shortened so that the result fits `maxLength`. */
export function importedName(name: string, maxLength = 255): string {
  return withTail(name, " (imported)", maxLength);
}

/**
 * Rows of one kind reordered so that a row another row names in `columns` comes before it (stable
 * otherwise): import inserts in file order and checks each reference against what is already in,
 * and an item may name a newer one (a template set after both were created). A cycle keeps the
 * remaining rows in their order; import then refuses the dangling reference with a 400.
 */
export function referencedFirst<R extends Record<string, unknown>>(rows: readonly R[], idColumn: string, columns: readonly string[]): R[] {
  const byId = new Map(rows.map((r) => [r[idColumn], r]));
  const placed = new Set<R>();
  const visiting = new Set<R>();
  const out: R[] = [];
  const visit = (row: R) => {
    if (placed.has(row) || visiting.has(row)) return;
    visiting.add(row);
    for (const c of columns) {
      const named = byId.get(row[c]);
      if (named && named !== row) visit(named);
    }
    visiting.delete(row);
    placed.add(row);
    out.push(row);
  };
  rows.forEach(visit);
  return out;
}
