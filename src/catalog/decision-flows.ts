import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  DecisionFlowSchema,
  DecisionFlowVersionSchema,
  ListDecisionFlowVersionsResponseSchema,
  type DecisionFlow,
  type ListDecisionFlowVersionsResponse,
  type PublishDecisionFlowRequest,
  type RollbackDecisionFlowRequest,
} from "../../gen/decisioning/v1/configuration_pb.js";
import type { CatalogIdRequest } from "../../gen/decisioning/v1/catalog_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, notFound } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { CatalogRow, CatalogStore, DecisionConfigStore } from "./catalog-store.js";
import { snapshot, toMessage } from "./catalog-mapper.js";
import type { OfferEventListener } from "./offer-events.js";

/**
 * Runs inside a publish's transaction, after the flow row is locked and before anything is written:
 * throws to refuse the publish (the tenant requires an approval and has none), or consumes what
 * authorized it, so that the publish and the consumption commit or roll back together.
 */
export type PublishGate = (t: Transaction, ctx: TenantContext, flowId: string) => Promise<void>;

const MAX_NOTES = 2000;

/**
 * The lifecycle of decision flows beyond CRUD (spec 9): publish snapshots the draft's nodes as a new
 * numbered version; rollback publishes an earlier version's nodes as a new version. Both are
 * audit-logged with the change-feed payloads of spec 2.7.
 */
export class DecisionFlowLifecycle {
  constructor(
    private readonly store: CatalogStore,
    private readonly flows: DecisionConfigStore,
    private readonly audit: AuditLog,
    private readonly publishGate: PublishGate = async () => {},
  ) {}

  async publish(ctx: TenantContext, req: PublishDecisionFlowRequest): Promise<DecisionFlow> {
    if (req.notes.length > MAX_NOTES) throw invalidField("notes", `must be at most ${MAX_NOTES} characters`);
    return this.transition(ctx, req.id, async (t, before) => {
      await this.publishGate(t, ctx, before.id);
      const version = await this.flows.insertFlowVersion(t, ctx.tenantId, {
        flow_id: before.id,
        config: before.config as Record<string, unknown>,
        offer_ids: before.offer_ids as string[],
        notes: req.notes,
        published_by: ctx.actorName,
      });
      const after = await this.store.update(t, "decision_flows", ctx.tenantId, before.id, { published_version: version.version }, true);
      return { after, action: "publish" as const, changes: { version: version.version, notes: req.notes } };
    });
  }

  async rollback(ctx: TenantContext, req: RollbackDecisionFlowRequest): Promise<DecisionFlow> {
    if (req.notes.length > MAX_NOTES) throw invalidField("notes", `must be at most ${MAX_NOTES} characters`);
    return this.transition(ctx, req.id, async (t, before) => {
      // A rollback changes what customers are offered as much as a publish: the same gate (docs/approvals.md).
      await this.publishGate(t, ctx, before.id);
      const target = req.toVersion > 0 ? await this.flows.flowVersion(t, ctx.tenantId, before.id, req.toVersion) : null;
      if (!target) throw invalidField("toVersion", `flow has no published version ${req.toVersion}`);
      if (target.version === before.published_version) throw invalidField("toVersion", `version ${target.version} is already the published version`);
      // Membership stays live for auto-assembled flows; a hand-picked flow gets its old offers back.
      const offerIds = before.auto_assemble ? (before.offer_ids as string[]) : target.offer_ids;
      const version = await this.flows.insertFlowVersion(t, ctx.tenantId, {
        flow_id: before.id,
        config: target.config,
        offer_ids: offerIds,
        notes: req.notes,
        published_by: ctx.actorName,
      });
      const after = await this.store.update(
        t,
        "decision_flows",
        ctx.tenantId,
        before.id,
        { published_version: version.version, config: target.config, offer_ids: offerIds },
        true,
      );
      return {
        after,
        action: "rollback" as const,
        changes: { fromVersion: before.published_version, toVersion: target.version, newVersion: version.version, notes: req.notes },
      };
    });
  }

  async listVersions(ctx: TenantContext, req: CatalogIdRequest): Promise<ListDecisionFlowVersionsResponse> {
    const flow = isUuid(req.id) ? await this.store.find("decision_flows", ctx.tenantId, { id: req.id }) : null;
    if (!flow) throw notFound("decision flow", req.id);
    const versions = await this.flows.flowVersions(ctx.tenantId, flow.id);
    return create(ListDecisionFlowVersionsResponseSchema, {
      data: versions.map((v) =>
        create(DecisionFlowVersionSchema, {
          version: v.version,
          config: v.config as never,
          offerIds: v.offer_ids,
          notes: v.notes,
          publishedBy: v.published_by ?? undefined,
          publishedAt: timestampFromDate(v.published_at),
        }),
      ),
    });
  }

  /**
   * Auto-assembly on offer events: an offer that becomes active joins every active auto-assembling
   * flow, one that leaves active leaves the auto-assembling flows, a deleted one leaves every flow.
   * Each changed flow gets an update entry.
   */
  readonly onOfferEvent: OfferEventListener = async (t, ctx, event) => {
    const change = event.kind === "deleted" ? "remove" : event.status === "active" ? "add" : event.kind === "status_changed" ? "withdraw" : null;
    if (!change) return;
    const changed = await this.flows.assemble(t, ctx.tenantId, event.offerId, change);
    for (const { before, after } of changed) {
      await this.recordFlow(t, ctx, "update", before, after, {
        reason: `auto-assembly: offer ${event.offerId} ${change === "add" ? "added" : "removed"}`,
        offerId: event.offerId,
      });
    }
  };

  private recordFlow(
    t: Transaction,
    ctx: TenantContext,
    action: "update" | "publish" | "rollback",
    before: CatalogRow,
    after: CatalogRow,
    changes: Record<string, unknown>,
  ): Promise<void> {
    return this.audit.record(t, ctx, {
      action,
      entityType: "decision_flow",
      entityId: after.id,
      entityName: after.name,
      before: snapshot(DecisionFlowSchema, before),
      after: snapshot(DecisionFlowSchema, after),
      entityVersion: after.version,
      changes,
    });
  }

  private async transition(
    ctx: TenantContext,
    id: string,
    work: (t: Transaction, before: CatalogRow) => Promise<{ after: CatalogRow; action: "publish" | "rollback"; changes: Record<string, unknown> }>,
  ): Promise<DecisionFlow> {
    const row = await this.store.transaction(ctx.tenantId, async (t) => {
      const before = isUuid(id) ? await this.store.find("decision_flows", ctx.tenantId, { id }, { t }) : null;
      if (!before) throw notFound("decision flow", id);
      const { after, action, changes } = await work(t, before);
      await this.recordFlow(t, ctx, action, before, after, changes);
      return after;
    });
    return toMessage(DecisionFlowSchema, row);
  }
}
