import { create } from "@bufbuild/protobuf";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import {
  CatalogEntrySchema,
  CatalogEntryService,
  CatalogIdRequestSchema,
  OfferWriteSchema,
  type OfferWrite,
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
import type { Condition, SegmentDefinition } from "../core/index.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, notFound } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CatalogCollection, collectionTarget } from "./catalog-collection.js";
import type { CatalogWriteType, WriteTarget } from "./write-targets.js";
import type { PublishGate } from "./decision-flows.js";
import { toCatalogEntry, toCreative } from "./catalog-mapper.js";
import { CREATIVE_RULES, DEFAULT_OUTCOME_TYPES, ENTRY_KINDS } from "./catalog-rules.js";
import type { CatalogStore, DecisionConfigRows, DecisionConfigStore } from "./catalog-store.js";
import { createDecisionConfig } from "./decision-config.js";
import { configReferenceViolations, configViolations } from "./catalog-support.js";
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
  /** Whether a live decision flow of the tenant has this id or key, as Recommend's `flow` names one. */
  flowExists(tenantId: string, idOrKey: string): Promise<boolean>;
  /** The ids and keys of the tenant's live decision flows: what a pipeline IR's decide node may name. */
  flowKeys(tenantId: string): Promise<Array<{ id: string; key: string }>>;
  /** The writes an approval applies, by approval entity type (write-targets.ts). */
  writeTargets: Record<CatalogWriteType, WriteTarget>;
  /** The active segments with their conditions: what the unified profile evaluates as membership. */
  segmentDefinitions(tenantId: string): Promise<SegmentDefinition[]>;
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
  publishGate?: PublishGate,
): Catalog {
  const decisionConfig = createDecisionConfig(store, decisionStore, audit, publishGate);
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
        validate: k.validateConfig
          ? async (ctx, after, before) => {
              const violations = configViolations(k.validateConfig!(after.config));
              return violations.length ? violations : configReferenceViolations(store, ctx.tenantId, after.config, before?.config);
            }
          : undefined,
        // A config written without a defaulted key is stored with the default, so a read shows what applies.
        derive: k.configDefaults
          ? async (_ctx, after, before) => {
              const config = after.config as Record<string, unknown> | null;
              if (config === before?.config || config === null || typeof config !== "object" || Array.isArray(config)) return {};
              return { config: { ...k.configDefaults, ...config } };
            }
          : undefined,
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
    writeTargets: {
      ...decisionConfig.targets,
      offer: {
        writeSchema: OfferWriteSchema,
        create: (ctx, req, t) => offers.createWithin(ctx, req as OfferWrite, t),
        update: (ctx, req, t) => offers.updateWithin(ctx, req as OfferWrite, t),
        delete: (ctx, id, t) => offers.deleteWithin(ctx, create(CatalogIdRequestSchema, { id }), t),
      },
      creative: collectionTarget(creatives),
      channel: collectionTarget(entry(ENTRY_KINDS.channel.collection)),
      qualificationRule: collectionTarget(entry(ENTRY_KINDS.qualification_rule.collection)),
      contactPolicy: collectionTarget(entry(ENTRY_KINDS.contact_policy.collection)),
      rankingProfile: collectionTarget(entry(ENTRY_KINDS.ranking_profile.collection)),
    },
    decisionConfig: (tenantId) => decisionStore.decisionConfig(tenantId),
    async liveIds(tenantId, table, ids) {
      const live = await store.liveIds(table, tenantId, ids.filter(isUuid).map((id) => id.toLowerCase()));
      return new Set(ids.filter((id) => live.has(id.toLowerCase())));
    },
    async flowExists(tenantId, idOrKey) {
      return (isUuid(idOrKey) && (await store.find("decision_flows", tenantId, { id: idOrKey })) !== null) || (await store.find("decision_flows", tenantId, { key: idOrKey })) !== null;
    },
    flowKeys: (tenantId) => store.liveFlowKeys(tenantId),
    async segmentDefinitions(tenantId) {
      const rows = await store.activeEntries(tenantId, "segment");
      return rows.map((r) => ({
        id: r.id as string,
        name: r.name as string,
        condition: (r.config as { condition: Condition }).condition,
        definedAt: (r.updated_at as Date).getTime(),
      }));
    },
    async seedTenant(t, ctx) {
      const outcomeTypes = entry(ENTRY_KINDS.outcome_type.collection);
      for (const o of DEFAULT_OUTCOME_TYPES) {
        await outcomeTypes.create(ctx, create(CatalogEntryWriteSchema, { name: o.name, key: o.key, category: o.category }), t);
      }
    },
  };
}
