import { conflict, invalidFields, isAppError, type FieldViolation } from "../platform/errors.js";
import { isUniqueViolation } from "../platform/db.js";
import { isUuid } from "../platform/ids.js";
import type { CatalogStore, EntryKind } from "./catalog-store.js";
import { ENTRY_KINDS } from "./catalog-rules.js";

/**
 * Foreign references inside a body must name live entries of the caller's tenant (spec 7: 400, never
 * a 404 and never a leak of whether the id exists elsewhere).
 */
export async function referenceViolations(
  store: CatalogStore,
  tenantId: string,
  refs: Array<{ field: string; kind: EntryKind | "offer"; id: unknown }>,
): Promise<FieldViolation[]> {
  const violations: FieldViolation[] = [];
  for (const ref of refs) {
    if (ref.id === undefined || ref.id === null) continue;
    const id = String(ref.id);
    const found =
      isUuid(id) &&
      (ref.kind === "offer"
        ? await store.find("offers", tenantId, { id })
        : await store.find("catalog_entries", tenantId, { id }, { filter: { kind: ref.kind } }));
    const label = ref.kind === "offer" ? "offer" : ENTRY_KINDS[ref.kind].label;
    if (!found) violations.push({ field: ref.field, message: `unknown ${label} ${id}` });
  }
  return violations;
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
