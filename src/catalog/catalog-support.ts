import { conflict, invalidField, invalidFields, isAppError, type FieldViolation } from "../platform/errors.js";
import { isUniqueViolation } from "../platform/db.js";
import { isUuid } from "../platform/ids.js";
import type { CatalogStore, EntryKind, RowFilter } from "./catalog-store.js";
import { ENTRY_KINDS } from "./catalog-rules.js";
import { configReferences } from "../core/index.js";
import type { FieldRule } from "./write-fields.js";

/** Longest `q` a catalog list accepts: the longest name (catalog-rules.ts). */
const MAX_NAME_FILTER = 255;

/**
 * The `q` and `status` filters of a catalog list (an extension beyond spec 4.3, docs/catalog.md):
 * `status` must be one the list's own rules allow, so a typo is a 400 rather than an empty page.
 */
export function listFilters(req: { q?: string; status?: string }, rules: readonly FieldRule[]): { filter: RowFilter; nameContains: string | null } {
  if (req.q && req.q.length > MAX_NAME_FILTER) throw invalidField("q", `must be at most ${MAX_NAME_FILTER} characters`);
  const filter: RowFilter = {};
  if (req.status) {
    const allowed = rules.find((r) => r.name === "status")?.oneOf;
    if (!allowed) throw invalidField("status", "is not a filter of this list");
    if (!allowed.includes(req.status)) throw invalidField("status", `must be one of ${allowed.join(", ")}`);
    filter.status = req.status;
  }
  return { filter, nameContains: req.q || null };
}

/**
 * Foreign references inside a body must name live entries of the caller's tenant (spec 7: 400, never
 * a 404 and never a leak of whether the id exists elsewhere). One query per kind named.
 */
export async function referenceViolations(
  store: CatalogStore,
  tenantId: string,
  refs: Array<{ field: string; kind: EntryKind | "offer"; id: unknown }>,
): Promise<FieldViolation[]> {
  const named = refs.filter((r) => r.id !== undefined && r.id !== null).map((r) => ({ ...r, id: String(r.id) }));
  const found = new Map<string, Set<string>>();
  for (const kind of new Set(named.map((r) => r.kind))) {
    const ids = [...new Set(named.filter((r) => r.kind === kind && isUuid(r.id)).map((r) => r.id.toLowerCase()))];
    found.set(kind, kind === "offer" ? await store.liveIds("offers", tenantId, ids) : await store.liveIds("catalog_entries", tenantId, ids, { kind }));
  }
  return named
    .filter((r) => !found.get(r.kind)!.has(r.id.toLowerCase()))
    .map((r) => ({ field: r.field, message: `unknown ${r.kind === "offer" ? "offer" : ENTRY_KINDS[r.kind].label} ${r.id}` }));
}

/**
 * The references inside a rule's or a flow's `config` that do not name live entries of the tenant.
 * Only those the write adds are checked: a rule whose offer was deleted since can still be edited.
 */
export async function configReferenceViolations(store: CatalogStore, tenantId: string, config: unknown, before: unknown): Promise<FieldViolation[]> {
  const kept = new Set(before === undefined ? [] : configReferences(before).map((r) => `${r.kind}:${r.id}`));
  return referenceViolations(store, tenantId, configReferences(config).filter((r) => !kept.has(`${r.kind}:${r.id}`)));
}

export function throwIfInvalid(violations: FieldViolation[]): void {
  if (violations.length) throw invalidFields(violations);
}

/** A live-name (or key) unique index refused the write: 409 naming what collided. */
export async function mapConflict<T>(work: Promise<T>, message: string): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (!isAppError(err) && isUniqueViolation(err)) throw conflict("DUPLICATE_NAME", message);
    throw err;
  }
}

/** `config.trees[0]: must ...` as a field violation on `config`. */
export function configViolations(problems: string[]): FieldViolation[] {
  return problems.map((p) => {
    const at = p.indexOf(": ");
    return at < 0 ? { field: "config", message: p } : { field: p.slice(0, at), message: p.slice(at + 2) };
  });
}
