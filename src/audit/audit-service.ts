import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { anyPack, timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  AuditLogEntrySchema,
  AuditVerificationSchema,
  ChangeHistoryEntrySchema,
  ListAuditLogsResponseSchema,
  ListChangeHistoryResponseSchema,
  type AuditVerification,
  type AuditLogEntry,
  type ExportAuditLogRequest,
  type GetAuditLogRequest,
  type ListAuditLogsRequest,
  type ListAuditLogsResponse,
  type ListChangeHistoryRequest,
  type ListChangeHistoryResponse,
  type VerifyAuditExportRequest,
  type VerifyAuditLogRequest,
} from "../../gen/decisioning/v1/audit_pb.js";
import { HttpBodySchema, type HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { DownloadDispositionSchema } from "../../gen/decisioning/v1/common_pb.js";
import type { TenantContext } from "../platform/context.js";
import { invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { limitOffsetRequest, offsetPageRequest } from "../platform/pagination.js";
import { AUDIT_ACTIONS, entryJson, exportActionsMatching, integrityHash, type AuditAction, type AuditRow } from "./audit-entry.js";
import type { AuditFilter, AuditStore } from "./audit-store.js";
import { changeSummary, changedFields } from "./change-summary.js";
import { auditCsv, auditSoc2 } from "./audit-export.js";

/** Spec 8: audit export pages default to and stop at 10,000 records. */
export const EXPORT_MAX = 10_000;
const VERIFY_BATCH = 1000;
const EXPORT_FORMATS = ["json", "csv", "soc2"];

interface Verification {
  intact: boolean;
  verified: number;
  total: number;
  scanned: number;
  brokenAtId?: string;
  brokenReason?: "hash_mismatch" | "chain_link_mismatch";
}

function checkAction(action: string, violations: FieldViolation[]): void {
  if (action && !(AUDIT_ACTIONS as readonly string[]).includes(action)) {
    violations.push({ field: "action", message: `must be one of ${AUDIT_ACTIONS.join(", ")}` });
  }
}

function dateRange(start: Timestamp | undefined, end: Timestamp | undefined, violations: FieldViolation[]) {
  const since = start ? timestampDate(start) : undefined;
  const until = end ? timestampDate(end) : undefined;
  if (since && until && since > until) violations.push({ field: "endDate", message: "must not be before startDate" });
  return { since, until };
}

/** Reads of the audit log: pages, verification, exports and the change feed (spec 4.5). */
export class AuditService {
  constructor(private readonly store: AuditStore) {}

  async listAuditLogs(ctx: TenantContext, req: ListAuditLogsRequest): Promise<ListAuditLogsResponse> {
    const { page, limit, offset } = offsetPageRequest(req, 100);
    const filter: AuditFilter = { entityType: req.entityType || undefined };
    const [rows, total] = await Promise.all([this.store.page(ctx.tenantId, filter, limit, offset, "newest"), this.store.count(ctx.tenantId, filter)]);
    return create(ListAuditLogsResponseSchema, {
      logs: rows.map((r) => fromJson(AuditLogEntrySchema, entryJson(r) as JsonValue)),
      total,
      page,
      limit,
    });
  }

  async getAuditLog(ctx: TenantContext, req: GetAuditLogRequest): Promise<AuditLogEntry> {
    const row = isUuid(req.id) ? await this.store.byId(ctx.tenantId, req.id) : null;
    if (!row) throw notFound("audit log entry", req.id);
    return fromJson(AuditLogEntrySchema, entryJson(row) as JsonValue);
  }

  async verifyAuditLog(ctx: TenantContext, req: VerifyAuditLogRequest): Promise<AuditVerification> {
    if (req.limit !== undefined && (!Number.isInteger(req.limit) || req.limit < 1)) throw invalidField("limit", "must be a whole number of at least 1");
    const total = await this.store.count(ctx.tenantId, {});
    const anchor = req.limit === undefined ? null : await this.store.nthNewest(ctx.tenantId, req.limit);
    return create(AuditVerificationSchema, await this.verify(ctx.tenantId, anchor, undefined, total));
  }

  /** POST /audit-export: action verify_integrity over the entries of a date range. */
  async verifyAuditExport(ctx: TenantContext, req: VerifyAuditExportRequest): Promise<AuditVerification> {
    const violations: FieldViolation[] = [];
    if (req.action !== "verify_integrity") violations.push({ field: "action", message: req.action ? "must be verify_integrity" : "is required" });
    const { since, until } = dateRange(req.startDate, req.endDate, violations);
    if (violations.length) throw invalidFields(violations);
    return create(AuditVerificationSchema, await this.verifyRange(ctx.tenantId, since, until));
  }

  async exportAuditLog(ctx: TenantContext, req: ExportAuditLogRequest): Promise<HttpBody> {
    const violations: FieldViolation[] = [];
    const format = req.format || "json";
    if (!EXPORT_FORMATS.includes(format)) violations.push({ field: "format", message: `must be one of ${EXPORT_FORMATS.join(", ")}` });
    const { limit, offset } = limitOffsetRequest(req, EXPORT_MAX, EXPORT_MAX, violations);
    checkAction(req.action, violations);
    const { since, until } = dateRange(req.startDate, req.endDate, violations);
    if (violations.length) throw invalidFields(violations);

    const filter: AuditFilter = { entityType: req.entityType || undefined, actions: req.action ? exportActionsMatching(req.action) : undefined, since, until };
    const [rows, total] = await Promise.all([this.store.page(ctx.tenantId, filter, limit, offset, "oldest"), this.store.count(ctx.tenantId, filter)]);
    const day = new Date().toISOString().slice(0, 10);
    if (format === "csv") return download(auditCsv(rows), "text/csv; charset=utf-8", `audit-log-${day}.csv`);
    if (format === "soc2") {
      const integrity = await this.verifyRange(ctx.tenantId, since, until);
      const report = auditSoc2(
        rows,
        { tenantId: ctx.tenantId, startDate: since?.toISOString() ?? null, endDate: until?.toISOString() ?? null, total, limit, offset },
        { ...integrity },
      );
      return download(JSON.stringify(report, null, 2), "application/json", `audit-soc2-${day}.json`);
    }
    return create(HttpBodySchema, {
      contentType: "application/json",
      data: new TextEncoder().encode(JSON.stringify({ data: rows.map(entryJson), total, limit, offset })),
    });
  }

  async listChangeHistory(ctx: TenantContext, req: ListChangeHistoryRequest): Promise<ListChangeHistoryResponse> {
    const violations: FieldViolation[] = [];
    checkAction(req.action, violations);
    if (violations.length) throw invalidFields(violations);
    const { page, limit, offset } = offsetPageRequest(req, 200);
    const filter: AuditFilter = {
      entityType: req.entityType || undefined,
      entityId: req.entityId || undefined,
      actions: req.action ? [req.action as AuditAction] : undefined,
      since: req.since ? timestampDate(req.since) : undefined,
    };
    const [rows, total] = await Promise.all([this.store.page(ctx.tenantId, filter, limit, offset, "newest"), this.store.count(ctx.tenantId, filter)]);
    return create(ListChangeHistoryResponseSchema, {
      changes: rows.map((r) =>
        create(ChangeHistoryEntrySchema, {
          id: r.id,
          action: r.action,
          entityType: r.entity_type,
          entityId: r.entity_id,
          entityName: r.entity_name ?? undefined,
          summary: changeSummary(r),
          user: { id: r.user_id ?? undefined, name: r.user_name },
          timestamp: timestampFromDate(r.timestamp),
          changes: changeFeedPayload(r),
        }),
      ),
      total,
      page,
      limit,
    });
  }

  private async verifyRange(tenantId: string, since: Date | undefined, until: Date | undefined): Promise<Verification> {
    const total = await this.store.count(tenantId, { since, until });
    const anchor = since ? await this.store.lastBefore(tenantId, since) : null;
    return this.verify(tenantId, anchor, until, total);
  }

  /**
   * Walks the chain after `anchor` (from its start when null) in seq order: each entry's hash must
   * recompute, and its prevHash must be the previous entry's hash (null for the very first entry).
   */
  private async verify(tenantId: string, anchor: AuditRow | null, until: Date | undefined, total: number): Promise<Verification> {
    let prev: AuditRow | null = anchor;
    let scanned = 0;
    let verified = 0;
    for (;;) {
      const batch = await this.store.chainBatch(tenantId, prev?.seq ?? null, until, VERIFY_BATCH);
      for (const row of batch) {
        scanned++;
        const reason =
          integrityHash(row) !== row.integrity_hash
            ? "hash_mismatch"
            : row.prev_hash !== (prev?.integrity_hash ?? null)
              ? "chain_link_mismatch"
              : null;
        if (reason) return { intact: false, verified, total, scanned, brokenAtId: row.id, brokenReason: reason };
        verified++;
        prev = row;
      }
      if (batch.length < VERIFY_BATCH) return { intact: true, verified, total, scanned };
    }
  }
}

/** Change-feed `changes`: what the writer recorded, plus which fields an update changed. */
function changeFeedPayload(row: AuditRow): JsonValue & Record<string, JsonValue> {
  const payload = { ...(row.changes as Record<string, JsonValue>) };
  if (row.action === "update") payload.changedFields = changedFields(row.before, row.after);
  return payload;
}

/** A file download: the REST door adds Content-Disposition (rest.ts); other domains' exports use it too. */
export function download(content: string | Uint8Array, contentType: string, filename: string): HttpBody {
  return create(HttpBodySchema, {
    contentType,
    data: typeof content === "string" ? new TextEncoder().encode(content) : content,
    extensions: [anyPack(DownloadDispositionSchema, create(DownloadDispositionSchema, { filename }))],
  });
}
