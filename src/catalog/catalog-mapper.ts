import { create, toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  OfferSchema,
  OfferWithRelationsSchema,
  CreativeSchema,
  CatalogEntrySchema,
  type Offer,
  type OfferWithRelations,
  type Creative,
  type CatalogEntry,
} from "../../gen/decisioning/v1/catalog_pb.js";
import type { CatalogRow } from "./catalog-store.js";

/**
 * Stored row → message: columns are named as the proto fields, so one mapping serves every catalog
 * message. NULL leaves an optional field unset (the REST door writes it as null).
 */
function fromRow<D extends DescMessage>(schema: D, row: CatalogRow): MessageShape<D> {
  const init: Record<string, unknown> = {};
  for (const f of schema.fields) {
    const value = row[f.name];
    if (value === null || value === undefined) continue;
    init[f.localName] = f.fieldKind === "message" && f.message.typeName === "google.protobuf.Timestamp" ? timestampFromDate(value as Date) : value;
  }
  return create(schema, init as never);
}

/** Any catalog message from its row. */
export const toMessage = fromRow;
export const toOffer = (row: CatalogRow): Offer => fromRow(OfferSchema, row);
export const toCreative = (row: CatalogRow): Creative => fromRow(CreativeSchema, row);
export const toCatalogEntry = (row: CatalogRow): CatalogEntry => fromRow(CatalogEntrySchema, row);

export function toOfferWithRelations(
  row: CatalogRow,
  creatives: CatalogRow[],
  refs: Map<string, CatalogRow>,
): OfferWithRelations {
  const message = fromRow(OfferWithRelationsSchema, row);
  message.creatives = creatives.map(toCreative);
  const ref = (id: unknown) => {
    const entry = typeof id === "string" ? refs.get(id) : undefined;
    return entry ? { $typeName: "decisioning.v1.EntityRef" as const, id: entry.id, name: entry.name } : undefined;
  };
  message.categoryRef = ref(row.category_id);
  message.subCategoryRef = ref(row.sub_category_id);
  return message;
}

/** Audit snapshots are the entity as the API shows it (spec 2.6: full snapshot). */
export function snapshot(schema: DescMessage, row: CatalogRow): Record<string, unknown> {
  return toJson(schema, fromRow(schema, row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}
