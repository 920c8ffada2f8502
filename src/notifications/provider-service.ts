import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  DeleteNotificationProviderResponseSchema,
  ListNotificationProvidersResponseSchema,
  NotificationProviderSchema,
  NotificationProviderWriteSchema,
  type DeleteNotificationProviderResponse,
  type ListNotificationProvidersResponse,
  type NotificationProvider,
  type NotificationProviderIdRequest,
  type NotificationProviderWrite,
} from "../../gen/decisioning/v1/notifications_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { writtenFieldNames } from "../catalog/write-fields.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { conflict, invalidFields, isAppError, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { MASK, PROVIDER_TYPES, isProviderType, maskedConfig, validateProviderConfig, type ProviderType } from "./provider-config.js";
import { openProviderSecrets, sealProviderSecrets } from "./provider-secrets.js";
import type { ProviderRow, ProviderStore, ProviderWrite } from "./provider-store.js";

const MAX_NAME = 200;

/** The provider as every reader sees it: secrets `****`. Also the audit snapshot, so no secret reaches the log. */
export function toNotificationProvider(row: ProviderRow): NotificationProvider {
  return create(NotificationProviderSchema, {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    name: row.name,
    config: maskedConfig(row.config, row.secret_fields) as JsonObject,
    version: row.version,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

function snapshot(row: ProviderRow): Record<string, unknown> {
  return { id: row.id, type: row.type, name: row.name, config: maskedConfig(row.config, row.secret_fields), version: row.version };
}

/** What of a tenant sends through a provider, in words (`alert rule "CTR drop"`); none is `[]`. */
export type ProviderUsers = (tenantId: string, providerId: string, t: Transaction) => Promise<string[]>;

/**
 * CRUD of a tenant's notification providers (spec 4.21; the bodies are ours, docs/notifications.md).
 * Every write is audit-logged in its transaction under the tenant's write lock, like catalog writes.
 */
export class ProviderService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: ProviderStore,
    private readonly audit: AuditLog,
    private readonly cipher: SettingsCipher,
    private readonly allowPrivate: boolean,
    private readonly users: readonly ProviderUsers[] = [],
  ) {}

  async listNotificationProviders(ctx: TenantContext): Promise<ListNotificationProvidersResponse> {
    const rows = await this.store.list(ctx.tenantId);
    return create(ListNotificationProvidersResponseSchema, { data: rows.map(toNotificationProvider) });
  }

  async getNotificationProvider(ctx: TenantContext, req: NotificationProviderIdRequest): Promise<NotificationProvider> {
    return toNotificationProvider(await this.existing(ctx.tenantId, req.id));
  }

  async createNotificationProvider(ctx: TenantContext, req: NotificationProviderWrite): Promise<NotificationProvider> {
    const id = newId();
    const write = this.validated(ctx.tenantId, id, req.type, req.name, req.config, null);
    const row = await this.writeTransaction(ctx.tenantId, async (t) => {
      const created = await this.store.insert(t, ctx.tenantId, write);
      await this.record(t, ctx, "create", null, created);
      return created;
    });
    return toNotificationProvider(row);
  }

  async updateNotificationProvider(ctx: TenantContext, req: NotificationProviderWrite): Promise<NotificationProvider> {
    await this.existing(ctx.tenantId, req.id);
    const fields = writtenFieldNames(NotificationProviderWriteSchema, req);
    const row = await this.writeTransaction(ctx.tenantId, async (t) => {
      const before = await this.store.find(ctx.tenantId, req.id, t, true);
      if (!before) throw notFound("notification provider", req.id);
      // Absent fields keep their values; a new type needs a config of that type.
      const type = fields.has("type") ? req.type : before.type;
      const config = fields.has("config") ? req.config : fields.has("type") ? undefined : this.currentConfig(before);
      const write = this.validated(ctx.tenantId, before.id, type, fields.has("name") ? req.name : before.name, config, before);
      const after = await this.store.update(t, ctx.tenantId, write);
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toNotificationProvider(row);
  }

  async deleteNotificationProvider(ctx: TenantContext, req: NotificationProviderIdRequest): Promise<DeleteNotificationProviderResponse> {
    await this.existing(ctx.tenantId, req.id);
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.store.find(ctx.tenantId, req.id, t, true);
      if (!before) throw notFound("notification provider", req.id);
      // Deleting it would leave them failing on every send; the connectors and schemas of ingestion answer alike.
      const users = (await Promise.all(this.users.map((find) => find(ctx.tenantId, before.id, t)))).flat();
      if (users.length) {
        const named = `${users.slice(0, 5).join(", ")}${users.length > 5 ? ` and ${users.length - 5} more` : ""}`;
        throw conflict("PROVIDER_IN_USE", `notification provider ${before.id} is in use by ${named}; change or delete them first`);
      }
      await this.store.delete(t, ctx.tenantId, req.id);
      await this.record(t, ctx, "delete", before, null);
    });
    return create(DeleteNotificationProviderResponseSchema, { success: true, id: req.id });
  }

  private async existing(tenantId: string, id: string): Promise<ProviderRow> {
    const row = isUuid(id) ? await this.store.find(tenantId, id) : null;
    if (!row) throw notFound("notification provider", id);
    return row;
  }

  /** The stored config with its secrets as `****`, which {@link validated} turns back into the stored values. */
  private currentConfig(row: ProviderRow): JsonObject {
    return maskedConfig(row.config, row.secret_fields) as JsonObject;
  }

  /**
   * The whole provider checked and its secrets sealed. A secret sent as `****` keeps its stored
   * value (so a form read and written back loses nothing); a secret left out is removed.
   */
  private validated(
    tenantId: string,
    id: string,
    type: string | undefined,
    name: string | undefined,
    config: JsonObject | undefined,
    before: ProviderRow | null,
  ): ProviderWrite {
    const violations: FieldViolation[] = [];
    if (type === undefined || type === "") violations.push({ field: "type", message: `is required (one of ${PROVIDER_TYPES.join(", ")})` });
    else if (!isProviderType(type)) violations.push({ field: "type", message: `must be one of ${PROVIDER_TYPES.join(", ")}` });
    const trimmed = (name ?? "").trim();
    if (!trimmed) violations.push({ field: "name", message: "is required" });
    else if (trimmed.length > MAX_NAME) violations.push({ field: "name", message: `must be at most ${MAX_NAME} characters` });
    if (config === undefined && type !== undefined && isProviderType(type)) violations.push({ field: "config", message: "is required" });
    if (violations.length) throw invalidFields(violations);
    const raw = { ...(config as Record<string, unknown>) };
    const kept = before && Object.values(raw).includes(MASK) ? openProviderSecrets(this.cipher, before) : {};
    for (const [k, v] of Object.entries(raw)) {
      if (v !== MASK) continue;
      if (k in kept) raw[k] = kept[k];
      else violations.push({ field: `config.${k}`, message: "is `****`, but no value is stored to keep: send the secret itself" });
    }
    const split = validateProviderConfig(type as ProviderType, raw, this.allowPrivate, violations);
    if (violations.length) throw invalidFields(violations);
    return {
      id,
      type: type as ProviderType,
      name: trimmed,
      config: split.visible,
      secret_fields: Object.keys(split.secrets).sort(),
      ...sealProviderSecrets(this.cipher, tenantId, id, split.secrets),
    };
  }

  /** Under the tenant's write lock (the audit chain's), with a taken name answered as 409. */
  private async writeTransaction(tenantId: string, fn: (t: Transaction) => Promise<ProviderRow>): Promise<ProviderRow> {
    try {
      return await tenantWriteTransaction(this.db, tenantId, fn);
    } catch (err) {
      if (isAppError(err) || !isUniqueViolation(err)) throw err;
      throw conflict("DUPLICATE_NAME", "name: another notification provider of this tenant has this name");
    }
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: ProviderRow | null, after: ProviderRow | null): Promise<void> {
    const row = (after ?? before)!;
    return this.audit.record(t, ctx, {
      action,
      entityType: "notification_provider",
      entityId: row.id,
      entityName: row.name,
      before: before && snapshot(before),
      after: after && snapshot(after),
      entityVersion: row.version,
    });
  }
}
