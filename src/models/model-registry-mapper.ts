import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ModelFamilyLifecycleSchema,
  ModelRegistryEntrySchema,
  ResolveModelLifecycleResponseSchema,
  type ModelRegistryEntry,
  type ResolveModelLifecycleResponse,
} from "../../gen/decisioning/v1/models_pb.js";
import { DEFAULT_MODEL_FAMILY } from "../core/index.js";
import type { RegistryRow } from "./model-registry-store.js";

export function toRegistryEntry(row: RegistryRow): ModelRegistryEntry {
  return create(ModelRegistryEntrySchema, {
    id: row.id,
    key: row.key,
    name: row.name,
    type: row.type,
    family: row.family,
    registryStatus: row.registry_status,
    version: row.version,
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** The audit snapshot of a move: the registry's view of the model (a move changes nothing else). */
export function registrySnapshot(row: RegistryRow): Record<string, unknown> {
  return toJson(ModelRegistryEntrySchema, toRegistryEntry(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}

/** Rows ordered by family (ModelRegistryStore.lineup) → one lifecycle per family, and the tenant's lineup beside them. */
export function toLifecycle(rows: RegistryRow[]): ResolveModelLifecycleResponse {
  const response = create(ResolveModelLifecycleResponseSchema);
  for (const row of rows) {
    let family = response.families.at(-1);
    if (family?.family !== row.family) response.families.push((family = create(ModelFamilyLifecycleSchema, { family: row.family })));
    const entry = toRegistryEntry(row);
    if (row.registry_status === "champion") family.champion = entry;
    else if (row.registry_status === "challenger") family.challengers.push(entry);
    else family.shadowModels.push(entry);
  }
  const tenantLineup = response.families.find((f) => f.family === DEFAULT_MODEL_FAMILY) ?? (response.families.length === 1 ? response.families[0] : undefined);
  if (tenantLineup) {
    response.champion = tenantLineup.champion;
    response.challengers = tenantLineup.challengers;
    response.shadowModels = tenantLineup.shadowModels;
  }
  return response;
}
