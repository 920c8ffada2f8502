import { create } from "@bufbuild/protobuf";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import {
  CatalogEntrySchema,
  CatalogEntryService,
  CatalogEntryWriteSchema,
  CreativeSchema,
  CreativeService,
  CreativeWriteSchema,
  ListCatalogEntriesResponseSchema,
  ListCreativesResponseSchema,
  OfferService as OfferServiceDesc,
  type ListCreativesRequest,
} from "../../gen/decisioning/v1/catalog_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, notFound } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CatalogCollection } from "./catalog-collection.js";
import { toCatalogEntry, toCreative } from "./catalog-mapper.js";
import { CREATIVE_RULES, DEFAULT_OUTCOME_TYPES, ENTRY_KINDS } from "./catalog-rules.js";
import type { CatalogStore, DecisionConfigRows, DecisionConfigStore } from "./catalog-store.js";
import { createDecisionConfig } from "./decision-config.js";
import { configViolations } from "./catalog-support.js";
import { OfferService, type AdminCheck } from "./offer-service.js";
import type { OfferEventListener } from "./offer-events.js";

type EntryCollection = CatalogCollection<typeof CatalogEntrySchema, typeof ListCatalogEntriesResponseSchema>;

export interface Catalog {
  offers: OfferService;
  /** Service implementations for the doors, keyed by method localName. */
  services: ServiceRegistration[];
  /** Fills a new tenant's catalog (the default outcome types) inside its creating transaction. */
  seedTenant(t: Transaction, ctx: TenantContext): Promise<void>;
  /** The read model Recommend compiles its snapshot from. */
  decisionConfig(tenantId: string): Promise<DecisionConfigRows>;
  /** Which of `ids` name live models or decision flows of the tenant: other domains' reference checks. */
  liveIds(tenantId: string, table: "algorithm_models" | "decision_flows", ids: readonly string[]): Promise<Set<string>>;
}

/** The content domain's read model: which of `ids` a creative may name (docs/content.md). */
export type ContentReferable = (tenantId: string, ids: readonly string[]) => Promise<Set<string>>;

export function createCatalog(
  store: CatalogStore,
  decisionStore: DecisionConfigStore,
  audit: AuditLog,
  isTenantAdmin: AdminCheck,
  listeners: OfferEventListener[] = [],
  contentReferable: ContentReferable = async () => new Set(),
): Catalog {
  const decisionConfig = createDecisionConfig(store, decisionStore, audit);
  const offers = new OfferService(store, audit, isTenantAdmin, [decisionConfig.onOfferEvent, ...listeners]);
  const creatives = new CatalogCollection(store, audit, {
    table: "creatives",
    entityType: "creative",
    label: "creative",
    schema: CreativeSchema,
    writeSchema: CreativeWriteSchema,
    listSchema: ListCreativesResponseSchema,
    toMessage: toCreative,
    rules: CREATIVE_RULES,
    references: [
      { column: "offer_id", field: "offerId", kind: "offer" },
      { column: "channel_id", field: "channelId", kind: "channel" },
      { column: "placement_id", field: "placementId", kind: "placement" },
    ],
    filter: {},
    fixed: {},
    // Checked when the write names a content item, so that archiving one blocks no other edit of its creatives.
    validate: async (ctx, after, before) => {
      const id = after.content_id as string | null | undefined;
      if (!id || id === before?.content_id) return [];
      const found = isUuid(id) && (await contentReferable(ctx.tenantId, [id])).has(id);
      return found ? [] : [{ field: "contentId", message: `unknown or archived content item ${id}` }];
    },
  });
  const entries = new Map<string, EntryCollection>(
    Object.values(ENTRY_KINDS).map((k) => [
      k.collection,
      new CatalogCollection(store, audit, {
        table: "catalog_entries",
        entityType: k.kind,
        label: k.label,
        schema: CatalogEntrySchema,
        writeSchema: CatalogEntryWriteSchema,
        listSchema: ListCatalogEntriesResponseSchema,
        toMessage: toCatalogEntry,
        rules: k.rules,
        references: k.references.map((r) => ({
          column: r.field,
          field: CatalogEntryWriteSchema.fields.find((f) => f.name === r.field)!.jsonName,
          kind: r.kind,
        })),
        filter: { kind: k.kind },
        fixed: { kind: k.kind, ...k.defaults },
        validate: k.validateConfig ? async (_ctx, after) => configViolations(k.validateConfig!(after.config)) : undefined,
      }),
    ]),
  );
  /** The collection a path names; an unknown one is no route at all. */
  const entry = (collection: string): EntryCollection => {
    const found = entries.get(collection);
    if (!found) throw notFound("collection", `/api/v1/${collection}`);
    return found;
  };

  return {
    offers,
    services: [
      { service: OfferServiceDesc, impl: offers as unknown as Record<string, Handler> },
      {
        service: CreativeService,
        impl: {
          listCreatives: (ctx, req: ListCreativesRequest) => {
            if (req.offerId && !isUuid(req.offerId)) throw invalidField("offerId", "must be an offer id");
            return creatives.list(ctx, req, req.offerId ? { offer_id: req.offerId } : {});
          },
          createCreative: (ctx, req) => creatives.create(ctx, req),
          updateCreative: (ctx, req) => creatives.update(ctx, req),
          deleteCreative: (ctx, req) => creatives.delete(ctx, req),
          getCreative: (ctx, req) => creatives.get(ctx, req),
        },
      },
      {
        service: CatalogEntryService,
        impl: {
          listCatalogEntries: (ctx, req) => entry(req.collection).list(ctx, req),
          createCatalogEntry: (ctx, req) => entry(req.collection).create(ctx, req),
          updateCatalogEntry: (ctx, req) => entry(req.collection).update(ctx, req),
          deleteCatalogEntry: (ctx, req) => entry(req.collection).delete(ctx, req),
          getCatalogEntry: (ctx, req) => entry(req.collection).get(ctx, req),
        },
      },
      ...decisionConfig.services,
    ],
    decisionConfig: (tenantId) => decisionStore.decisionConfig(tenantId),
    async liveIds(tenantId, table, ids) {
      const found = await Promise.all(ids.map(async (id) => (isUuid(id) && (await store.find(table, tenantId, { id })) ? id : null)));
      return new Set(found.filter((id): id is string => id !== null));
    },
    async seedTenant(t, ctx) {
      const outcomeTypes = entry(ENTRY_KINDS.outcome_type.collection);
      for (const o of DEFAULT_OUTCOME_TYPES) {
        await outcomeTypes.create(ctx, create(CatalogEntryWriteSchema, { name: o.name, key: o.key, category: o.category }), t);
      }
    },
  };
}
