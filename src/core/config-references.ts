/**
 * The catalog references inside a decision rule's or a flow's `config`: the ids the core will look
 * up in the tenant's catalog when it reads the rule. Spec 7 makes a reference that names nothing of
 * the tenant's (a typo, another tenant's id) a 400 on write, so the catalog checks each one; without
 * that, a rule aimed at an unknown id was stored and silently matched nothing.
 *
 * Read from configs that passed config-validation.ts, where these keys have one meaning wherever they
 * appear: `offerIds`/`categoryIds` lists (offer scopes, mutual exclusions, candidates nodes),
 * `categoryId` (max_per_category), `profileId` (rank nodes) and `scopeId`, whose kind its sibling
 * `scope` names (frequency caps). Conditions are data about the customer, never references.
 */
export type ReferenceKind = "offer" | "category" | "channel" | "ranking_profile";

export interface ConfigReference {
  /** The path in the request, e.g. `config.appliesTo.offerIds[1]`. */
  field: string;
  kind: ReferenceKind;
  id: string;
}

const LISTS: Record<string, ReferenceKind> = { offerIds: "offer", categoryIds: "category" };
const SINGLES: Record<string, ReferenceKind> = { categoryId: "category", profileId: "ranking_profile" };
const SCOPES: Record<string, ReferenceKind> = { offer: "offer", category: "category", channel: "channel" };

export function configReferences(config: unknown, path = "config"): ConfigReference[] {
  const out: ConfigReference[] = [];
  walk(config, path, out);
  return out;
}

function walk(value: unknown, path: string, out: ConfigReference[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${path}[${i}]`, out));
    return;
  }
  if (value === null || typeof value !== "object") return;
  const record = value as Record<string, unknown>;
  for (const [key, item] of Object.entries(record)) {
    const at = `${path}.${key}`;
    if (key === "condition") continue;
    if (Object.hasOwn(LISTS, key) && Array.isArray(item)) {
      item.forEach((id, i) => typeof id === "string" && out.push({ field: `${at}[${i}]`, kind: LISTS[key], id }));
    } else if (Object.hasOwn(SINGLES, key) && typeof item === "string") {
      out.push({ field: at, kind: SINGLES[key], id: item });
    } else if (key === "scopeId" && typeof item === "string" && typeof record.scope === "string" && Object.hasOwn(SCOPES, record.scope)) {
      out.push({ field: at, kind: SCOPES[record.scope], id: item });
    } else {
      walk(item, at, out);
    }
  }
}
