import { create } from "@bufbuild/protobuf";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import {
  ListContentResponseSchema,
  ListContentVersionsResponseSchema,
  type ContentDetail,
  type ContentIdRequest,
  type ContentItem,
  type ContentWrite,
  type ListContentRequest,
  type ListContentResponse,
  type ListContentVersionsRequest,
  type ListContentVersionsResponse,
  type RejectContentRequest,
  type RevertContentRequest,
} from "../../gen/decisioning/v1/content_pb.js";
import { CONTENT_MOVES, CONTENT_STATES, contentMoveRefusal, isContentStatus, type ContentMove } from "../core/index.js";
import { actorId } from "../approvals/actor.js";
import type { AuditAction } from "../audit/audit-entry.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { AppError, forbidden, invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { FieldRule } from "../catalog/write-fields.js";
import { contentSnapshot, toContentDetail, toContentItem, toContentVersion } from "./content-mapper.js";
import type { ContentChange, ContentRow, ContentStore } from "./content-store.js";

const MAX_TITLE = 255;
const MAX_CONTENT_TYPE = 100;
/** The body's bound, as the proto's `(field).max_chars` declares it to the request screen. */
const MAX_BODY = 1_000_000;

/** What `fields` checks, as column rules: an imported item's row is held to the same (docs/portability.md). */
export const CONTENT_ITEM_RULES: readonly FieldRule[] = [
  { name: "title", kind: "string", required: true, min: 1, max: MAX_TITLE },
  { name: "body", kind: "string", required: true, min: 1, max: MAX_BODY },
  { name: "content_type", kind: "string", required: true, min: 1, max: MAX_CONTENT_TYPE },
];
const MAX_REASON = 2000;
const MAX_TEXT_FILTER = 255;
/** Spec 8: the read shows 20 versions, the versions list up to 100. */
const READ_VERSIONS = 20;
const LIST_VERSIONS = 100;

export interface ContentDeps {
  store: ContentStore;
  audit: AuditLog;
  /** Invalidates the tenant's decision snapshots everywhere, once a change of what Recommend serves has committed. */
  configChanged(tenantId: string): void;
}

/** The links an item may hold to other items of its tenant. */
const LINKS = [
  { field: "parentTemplateId", column: "parent_template_id" },
  { field: "sourceId", column: "source_id" },
] as const;

/**
 * Content items (spec 2.17, 3.2, 4.8; docs/content.md). Every write runs under the tenant's write
 * lock with the item's row locked, writes its version snapshot when the version moves, and an
 * audit entry, all in one transaction. Recommend serves an item's published version, which only
 * publish (and archive, which withdraws it) changes. Submitter and approver are actors as the
 * approvals name them (a user id, or `oauth_client:<clientId>`), so an OAuth client of the editor
 * or admin role may take either part, never both for one review.
 */
export class ContentService {
  constructor(private readonly deps: ContentDeps) {}

  async listContent(ctx: TenantContext, req: ListContentRequest): Promise<ListContentResponse> {
    const page = cursorPageRequest(req);
    const status = req.status.trim();
    if (status && !isContentStatus(status)) throw invalidField("status", `must be one of ${CONTENT_STATES.join(", ")}`);
    if (req.text.length > MAX_TEXT_FILTER) throw invalidField("text", `must be at most ${MAX_TEXT_FILTER} characters`);
    const rows = await this.deps.store.page(ctx.tenantId, page, { status: status ? (status as ContentRow["status"]) : null, text: req.text || null });
    const result = cursorPage(rows, page.limit);
    return create(ListContentResponseSchema, { data: result.rows.map(toContentItem), pagination: result.pagination });
  }

  async getContent(ctx: TenantContext, req: ContentIdRequest): Promise<ContentDetail> {
    const { store } = this.deps;
    const item = await this.mustFind(ctx.tenantId, req.id);
    const link = (id: string | null) => (id ? store.item(ctx.tenantId, id) : Promise.resolve(null));
    const [parent, source, versions] = await Promise.all([link(item.parent_template_id), link(item.source_id), store.versions(ctx.tenantId, item.id, READ_VERSIONS)]);
    return toContentDetail(item, { parent, source, versions });
  }

  async listContentVersions(ctx: TenantContext, req: ListContentVersionsRequest): Promise<ListContentVersionsResponse> {
    const item = await this.mustFind(ctx.tenantId, req.id);
    return create(ListContentVersionsResponseSchema, { data: (await this.deps.store.versions(ctx.tenantId, item.id, LIST_VERSIONS)).map(toContentVersion) });
  }

  async createContent(ctx: TenantContext, req: ContentWrite): Promise<ContentItem> {
    const fields = this.fields(req, "create");
    const item = await this.deps.store.transaction(ctx.tenantId, async (t) => {
      const id = newId();
      await this.checkLinks(t, ctx.tenantId, id, fields);
      const row = await this.deps.store.insert(t, ctx.tenantId, {
        id,
        title: fields.title!,
        body: fields.body!,
        content_type: fields.content_type ?? "text",
        parent_template_id: fields.parent_template_id ?? null,
        source_id: fields.source_id ?? null,
        created_by: ctx.userId,
      });
      await this.deps.store.snapshot(t, ctx.tenantId, row, "create", ctx.userId);
      await this.record(t, ctx, "create", null, row);
      return row;
    });
    return toContentItem(item);
  }

  /** Any state; the state stays (spec 3.2), so an edit of a reviewed item reaches review only through a revert to draft. */
  async updateContent(ctx: TenantContext, req: ContentWrite): Promise<ContentItem> {
    const fields = this.fields(req, "update");
    return this.write(ctx, req.id, async (t, before) => {
      await this.checkLinks(t, ctx.tenantId, before.id, fields);
      const after = await this.deps.store.update(t, ctx.tenantId, before.id, fields, true);
      await this.deps.store.snapshot(t, ctx.tenantId, after, "update", ctx.userId);
      return { action: "update", after };
    });
  }

  /** From draft only (spec 3.2); a published version keeps serving through the review. */
  async submitContent(ctx: TenantContext, req: ContentIdRequest): Promise<ContentItem> {
    return this.move(ctx, req.id, "submit", () => ({ submitted_by: actorId(ctx), approved_by: null, approved_version: null, rejection_reason: null }));
  }

  /** Four eyes: whoever submitted the item (user or OAuth client) cannot approve it, whatever their role. */
  async approveContent(ctx: TenantContext, req: ContentIdRequest): Promise<ContentItem> {
    return this.move(ctx, req.id, "approve", (before) => {
      const approver = actorId(ctx);
      if (before.submitted_by === approver) throw forbidden("the submitter of a content item cannot approve it; another editor or admin must", "SELF_APPROVAL");
      return { approved_by: approver, approved_version: before.version };
    });
  }

  async rejectContent(ctx: TenantContext, req: RejectContentRequest): Promise<ContentItem> {
    const reason = req.reason.trim();
    if (!reason || reason.length > MAX_REASON) throw invalidField("reason", `is required, 1 to ${MAX_REASON} characters`);
    return this.move(ctx, req.id, "reject", () => ({ rejection_reason: reason, approved_by: null, approved_version: null }), { extra: () => ({ reason }) });
  }

  /**
   * The approved content goes live as a new version (spec 3.2: "version snapshot"), which becomes
   * both the item's version and its published version. An edit made after the approval is not
   * published with it: the item takes the approved content back, and the edit stays in the history.
   * The audit entry carries what spec 2.7 asks of a publish, `version` (the one now published) and
   * `notes` (empty: the request has none), beside the workflow move.
   */
  async publishContent(ctx: TenantContext, req: ContentIdRequest): Promise<ContentItem> {
    const at = new Date();
    const item = await this.move(
      ctx,
      req.id,
      "publish",
      async (before, t) => {
        const approved = (await this.deps.store.version(ctx.tenantId, before.id, before.approved_version ?? before.version, t))!;
        // The row is locked, so the bumped version is this one.
        return { title: approved.title, body: approved.body, content_type: approved.content_type, published_version: before.version + 1, published_at: at };
      },
      {
        newVersion: (t, before, after) =>
          this.deps.store.snapshot(t, ctx.tenantId, after, "publish", ctx.userId, { revertedFrom: before.approved_version ?? before.version, publishedAt: at }),
        extra: (after) => ({ version: after.version, notes: "" }),
      },
    );
    this.deps.configChanged(ctx.tenantId);
    return item;
  }

  /**
   * A new version in draft with the content of an earlier one; the published version keeps serving.
   * The audit entry carries what spec 2.7 asks of a rollback: `fromVersion` (the item's version
   * before), `toVersion` (the one reverted to), `newVersion` (the one made) and `notes` (empty: the
   * request has none).
   */
  async revertContent(ctx: TenantContext, req: RevertContentRequest): Promise<ContentItem> {
    return this.write(ctx, req.id, async (t, before) => {
      if (!Number.isInteger(req.version) || req.version < 1 || req.version >= before.version) {
        throw invalidField("version", `must be an earlier version of the item, 1 to ${before.version - 1}; the item is at version ${before.version}`);
      }
      const target = (await this.deps.store.version(ctx.tenantId, before.id, req.version, t))!;
      const after = await this.deps.store.update(
        t,
        ctx.tenantId,
        before.id,
        { title: target.title, body: target.body, content_type: target.content_type, status: "draft", submitted_by: null, approved_by: null, approved_version: null },
        true,
      );
      await this.deps.store.snapshot(t, ctx.tenantId, after, "revert", ctx.userId, { revertedFrom: target.version });
      return { action: "rollback", after, changes: { fromVersion: before.version, toVersion: target.version, newVersion: after.version, notes: "" } };
    });
  }

  /** Archives from any state (docs/content.md); an archived item stays as it is and answers 204 again. */
  async archiveContent(ctx: TenantContext, req: ContentIdRequest): Promise<Empty> {
    let withdrawn = false;
    await this.write(ctx, req.id, async (t, before) => {
      if (before.status === "archived") return null;
      withdrawn = before.published_version !== null;
      const after = await this.deps.store.update(t, ctx.tenantId, before.id, { status: "archived" }, false);
      return { action: "soft_delete", after };
    });
    if (withdrawn) this.deps.configChanged(ctx.tenantId);
    return create(EmptySchema);
  }

  /**
   * A workflow move of the table in core/content-workflow.ts, with the columns it sets. With
   * `newVersion`, the move makes the item's next version and writes its snapshot. `extra` adds to
   * the audit entry's `changes`, from the item after the move.
   */
  private move(
    ctx: TenantContext,
    id: string,
    move: ContentMove,
    columns: (before: ContentRow, t: Transaction) => ContentChange | Promise<ContentChange>,
    opts: {
      extra?: (after: ContentRow) => Record<string, unknown>;
      newVersion?: (t: Transaction, before: ContentRow, after: ContentRow) => Promise<void>;
    } = {},
  ): Promise<ContentItem> {
    return this.write(ctx, id, async (t, before) => {
      const refusal = contentMoveRefusal(move, before.status);
      if (refusal) throw new AppError({ code: "INVALID_ARGUMENT", reason: "ILLEGAL_TRANSITION", message: `status: ${refusal}` });
      const change = await columns(before, t);
      const after = await this.deps.store.update(t, ctx.tenantId, before.id, { ...change, status: CONTENT_MOVES[move].to }, Boolean(opts.newVersion));
      await opts.newVersion?.(t, before, after);
      const action: AuditAction = move === "submit" ? "update" : move;
      return { action, after, changes: { workflow: { move, from: before.status, to: after.status }, ...opts.extra?.(after) } };
    });
  }

  /** One write: the item locked under the tenant's write lock, the change, its audit entry. */
  private async write(
    ctx: TenantContext,
    id: string,
    change: (t: Transaction, before: ContentRow) => Promise<{ action: AuditAction; after: ContentRow; changes?: Record<string, unknown> } | null>,
  ): Promise<ContentItem> {
    const row = await this.deps.store.transaction(ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, id, t);
      const done = await change(t, before);
      if (!done) return before;
      await this.record(t, ctx, done.action, before, done.after, done.changes);
      return done.after;
    });
    return toContentItem(row);
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ContentRow> {
    const row = isUuid(id) ? await this.deps.store.item(tenantId, id, t) : null;
    if (!row) throw notFound("content item", id);
    return row;
  }

  /** The body's columns, every problem reported at once, naming its field. */
  private fields(req: ContentWrite, mode: "create" | "update"): ContentChange {
    const violations: FieldViolation[] = [];
    const change: ContentChange = {};
    const title = req.title?.trim();
    if (title !== undefined && (!title || title.length > MAX_TITLE)) violations.push({ field: "title", message: `must be 1 to ${MAX_TITLE} characters` });
    else if (title !== undefined) change.title = title;
    else if (mode === "create") violations.push({ field: "title", message: "is required" });
    if (req.body !== undefined && !req.body.trim()) violations.push({ field: "body", message: "must not be empty" });
    else if (req.body !== undefined) change.body = req.body;
    else if (mode === "create") violations.push({ field: "body", message: "is required" });
    const contentType = req.contentType?.trim();
    if (contentType !== undefined && (!contentType || contentType.length > MAX_CONTENT_TYPE)) {
      violations.push({ field: "contentType", message: `must be 1 to ${MAX_CONTENT_TYPE} characters` });
    } else if (contentType !== undefined) change.content_type = contentType;
    for (const link of LINKS) {
      const value = req[link.field];
      if (value === undefined) continue;
      // An empty string removes the link.
      if (value && !isUuid(value)) violations.push({ field: link.field, message: "must be a content item id" });
      else change[link.column] = value || null;
    }
    if (mode === "update" && !violations.length && !Object.keys(change).length) {
      violations.push({ field: "title", message: "nothing to update: send at least one of title, body, contentType, parentTemplateId, sourceId" });
    }
    if (violations.length) throw invalidFields(violations);
    return change;
  }

  /** Links name other items of the tenant: another tenant's id, or the item itself, is a 400 naming the field. */
  private async checkLinks(t: Transaction, tenantId: string, selfId: string, change: ContentChange): Promise<void> {
    const violations: FieldViolation[] = [];
    for (const link of LINKS) {
      const id = change[link.column];
      if (!id) continue;
      if (id === selfId) violations.push({ field: link.field, message: "cannot name the item itself" });
      else if (!(await this.deps.store.item(tenantId, id, t))) violations.push({ field: link.field, message: `unknown content item ${id}` });
    }
    if (violations.length) throw invalidFields(violations);
  }

  private record(t: Transaction, ctx: TenantContext, action: AuditAction, before: ContentRow | null, after: ContentRow, changes?: Record<string, unknown>) {
    return this.deps.audit.record(t, ctx, {
      action,
      entityType: "content_item",
      entityId: after.id,
      entityName: after.title,
      before: before ? contentSnapshot(before) : null,
      after: contentSnapshot(after),
      entityVersion: after.version,
      changes,
    });
  }
}
