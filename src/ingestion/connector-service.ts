import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import {
  ListConnectorsResponseSchema,
  type Connector,
  type ConnectorWrite,
  type IngestionIdRequest,
  type ListConnectorsResponse,
  type ListIngestionRequest,
} from "../../gen/decisioning/v1/ingestion_pb.js";
import type { AuditAction } from "../audit/audit-entry.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { conflict, invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { connectorSnapshot, toConnector } from "./ingestion-mapper.js";
import { describeStorageError, openObjectStore, type BucketAccess, type ObjectStoreOptions } from "./object-store.js";
import type { ConnectorFields, ConnectorRow, ConnectorStore } from "./connector-store.js";

/** authConfig fields that are secrets: sealed at rest, never returned, never exported. */
export const CONNECTOR_SECRET_FIELDS = ["externalId", "secretAccessKey"] as const;
type Secrets = Partial<Record<(typeof CONNECTOR_SECRET_FIELDS)[number], string>>;

const CONNECTOR_TYPES = ["aws_s3"];
const AUTH_METHODS = ["iam_role", "access_keys"] as const;
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const MAX_NAME = 100;
const MAX_DESCRIPTION = 2000;

export interface ConnectorDeps {
  db: Sequelize;
  store: ConnectorStore;
  audit: AuditLog;
  cipher: SettingsCipher;
  objectStore: ObjectStoreOptions;
}

const secretContext = (tenantId: string, id: string) => `ingestion_connector:${tenantId}:${id}`;

/**
 * Connectors (spec 2.21, 4.20; docs/ingestion.md). Creation, update and test verify access by
 * listing the bucket under the prefix and record `status` and `lastError`; the listing runs before
 * the transaction, so no lock waits on the network.
 */
export class ConnectorService {
  constructor(private readonly deps: ConnectorDeps) {}

  async listConnectors(ctx: TenantContext, req: ListIngestionRequest): Promise<ListConnectorsResponse> {
    const page = cursorPageRequest(req);
    const result = cursorPage(await this.deps.store.page(ctx.tenantId, page), page.limit);
    return create(ListConnectorsResponseSchema, { data: result.rows.map((r) => this.toPublic(r)), pagination: result.pagination });
  }

  async getConnector(ctx: TenantContext, req: IngestionIdRequest): Promise<Connector> {
    return this.toPublic(await this.mustFind(ctx.tenantId, req.id));
  }

  async createConnector(ctx: TenantContext, req: ConnectorWrite): Promise<Connector> {
    const id = newId();
    const fields = this.fields(ctx.tenantId, id, req, null);
    const verdict = await this.verify(this.access(fields.row, fields.secrets));
    const row = await this.transaction(ctx.tenantId, async (t) => {
      const row = await this.deps.store.insert(t, ctx.tenantId, id, { ...fields.row, ...verdict }, new Date()).catch((err) => this.nameTaken(err, fields.row.name));
      await this.record(t, ctx, "create", null, row);
      return row;
    });
    return this.toPublic(row);
  }

  async updateConnector(ctx: TenantContext, req: ConnectorWrite): Promise<Connector> {
    const before = await this.mustFind(ctx.tenantId, req.id);
    const fields = this.fields(ctx.tenantId, before.id, req, before);
    const verdict = await this.verify(this.access(fields.row, fields.secrets));
    const row = await this.transaction(ctx.tenantId, async (t) => {
      const locked = await this.mustFind(ctx.tenantId, before.id, t);
      const after = await this.deps.store.update(t, ctx.tenantId, locked.id, { ...fields.row, ...verdict }, new Date()).catch((err) => this.nameTaken(err, fields.row.name));
      await this.record(t, ctx, "update", locked, after);
      return after;
    });
    return this.toPublic(row);
  }

  async deleteConnector(ctx: TenantContext, req: IngestionIdRequest): Promise<Empty> {
    await this.transaction(ctx.tenantId, async (t) => {
      const row = await this.mustFind(ctx.tenantId, req.id, t);
      if (await this.deps.store.inUse(ctx.tenantId, row.id, row.name, t)) throw conflict("CONNECTOR_IN_USE", "a pipeline uses this connector (its connectorId or a source node); delete or change the pipeline first");
      await this.deps.store.remove(t, ctx.tenantId, row.id);
      await this.record(t, ctx, "delete", row, null);
    });
    return create(EmptySchema);
  }

  async testConnector(ctx: TenantContext, req: IngestionIdRequest): Promise<Connector> {
    // Spec 4.20: the id comes in the body, where a missing one is a missing field, not an unknown connector.
    if (!req.id) throw invalidField("id", "is required");
    const row = await this.mustFind(ctx.tenantId, req.id);
    const verdict = await this.verify(this.accessOf(row));
    const after = await this.transaction(ctx.tenantId, async (t) => {
      await this.mustFind(ctx.tenantId, row.id, t);
      return this.deps.store.setStatus(t, ctx.tenantId, row.id, verdict.status, verdict.last_error);
    });
    return this.toPublic(after);
  }

  /** How the runner reaches a connector's bucket: its config with its secrets opened. */
  accessOf(row: ConnectorRow): BucketAccess {
    return this.access(row, this.open(row));
  }

  /** A tenant's connector by id, or null (the runner's read). */
  find(tenantId: string, id: string): Promise<ConnectorRow | null> {
    return isUuid(id) ? this.deps.store.find(tenantId, id) : Promise.resolve(null);
  }

  private access(row: Pick<ConnectorRow, "config" | "auth_method" | "auth_config">, secrets: Secrets): BucketAccess {
    return {
      ...row.config,
      authMethod: row.auth_method,
      roleArn: row.auth_config.roleArn ?? null,
      accessKeyId: row.auth_config.accessKeyId ?? null,
      externalId: secrets.externalId ?? null,
      secretAccessKey: secrets.secretAccessKey ?? null,
    };
  }

  /** Lists one key under the prefix: proof that the credentials reach the bucket. */
  private async verify(access: BucketAccess): Promise<Pick<ConnectorRow, "status" | "last_error">> {
    let store;
    try {
      store = await openObjectStore(access, this.deps.objectStore);
      await store.list(access.prefix, 1);
      return { status: "active", last_error: null };
    } catch (err) {
      return { status: "error", last_error: describeStorageError(err) };
    } finally {
      store?.close();
    }
  }

  private open(row: ConnectorRow): Secrets {
    if (row.secrets === null || row.secrets_key_id === null) return {};
    return JSON.parse(this.deps.cipher.open({ ciphertext: row.secrets, keyId: row.secrets_key_id }, secretContext(row.tenant_id, row.id))) as Secrets;
  }

  private toPublic(row: ConnectorRow): Connector {
    const set = row.secrets === null ? [] : Object.keys(this.openQuietly(row));
    return toConnector(row, set);
  }

  /** Which secrets are set, for display; a key that no longer opens shows none rather than failing a read. */
  private openQuietly(row: ConnectorRow): Secrets {
    try {
      return this.open(row);
    } catch {
      return {};
    }
  }

  /** The body as columns; every problem at once, naming its field. Secrets not sent keep their stored values. */
  private fields(tenantId: string, id: string, req: ConnectorWrite, before: ConnectorRow | null): { row: ConnectorFields; secrets: Secrets } {
    const v: FieldViolation[] = [];
    const name = req.name.trim();
    if (!name || name.length > MAX_NAME) v.push({ field: "name", message: `is required, 1 to ${MAX_NAME} characters` });
    const type = req.type.trim() || "aws_s3";
    if (!CONNECTOR_TYPES.includes(type)) v.push({ field: "type", message: `must be one of ${CONNECTOR_TYPES.join(", ")}` });
    if (req.description.length > MAX_DESCRIPTION) v.push({ field: "description", message: `at most ${MAX_DESCRIPTION} characters` });
    const c = req.config;
    const bucket = c?.bucket.trim() ?? "";
    if (!BUCKET.test(bucket)) v.push({ field: "config.bucket", message: "must be a bucket name: 3 to 63 lowercase letters, digits, dots or hyphens" });
    const region = c?.region.trim() || "us-east-1";
    if (!/^[a-z0-9-]{1,32}$/.test(region)) v.push({ field: "config.region", message: "must be a region name such as eu-west-1" });
    const prefix = (c?.prefix ?? "").replace(/^\/+/, "");
    if (prefix.length > 512) v.push({ field: "config.prefix", message: "at most 512 characters" });
    const endpoint = c?.endpoint.trim() ?? "";
    if (endpoint) {
      let url: URL | null = null;
      try {
        url = new URL(endpoint);
      } catch {
        /* reported below */
      }
      if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) {
        v.push({ field: "config.endpoint", message: "must be an http(s) URL without credentials" });
      }
    }
    const authMethod = req.authMethod.trim() as (typeof AUTH_METHODS)[number];
    if (!AUTH_METHODS.includes(authMethod)) v.push({ field: "authMethod", message: `must be one of ${AUTH_METHODS.join(", ")}` });
    const a = req.authConfig;
    const kept: Secrets = before && before.auth_method === authMethod ? this.open(before) : {};
    const secrets: Secrets = {};
    const auth: ConnectorRow["auth_config"] = {};
    if (authMethod === "iam_role") {
      const roleArn = a?.roleArn?.trim() ?? "";
      if (!/^arn:[a-z-]+:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/.test(roleArn)) v.push({ field: "authConfig.roleArn", message: "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)" });
      auth.roleArn = roleArn;
      const externalId = a?.externalId ?? kept.externalId;
      if (externalId !== undefined && (externalId.length < 2 || externalId.length > 1224)) v.push({ field: "authConfig.externalId", message: "must be 2 to 1224 characters" });
      if (externalId) secrets.externalId = externalId;
    } else if (authMethod === "access_keys") {
      const accessKeyId = a?.accessKeyId?.trim() ?? "";
      if (!/^[A-Za-z0-9]{3,128}$/.test(accessKeyId)) v.push({ field: "authConfig.accessKeyId", message: "is required: letters and digits" });
      auth.accessKeyId = accessKeyId;
      const secret = a?.secretAccessKey ?? kept.secretAccessKey;
      if (!secret || secret.length > 256) v.push({ field: "authConfig.secretAccessKey", message: "is required, at most 256 characters" });
      else secrets.secretAccessKey = secret;
    }
    if (v.length) throw invalidFields(v);
    const sealed = Object.keys(secrets).length ? this.deps.cipher.seal(JSON.stringify(secrets), secretContext(tenantId, id)) : null;
    return {
      row: {
        name,
        type,
        description: req.description,
        config: { bucket, region, prefix, endpoint, forcePathStyle: c?.forcePathStyle ?? false },
        auth_method: authMethod,
        auth_config: auth,
        secrets: sealed?.ciphertext ?? null,
        secrets_key_id: sealed?.keyId ?? null,
        status: "error",
        last_error: null,
      },
      secrets,
    };
  }

  private nameTaken(err: unknown, name: string): never {
    if (isUniqueViolation(err)) throw conflict("CONNECTOR_NAME_TAKEN", `name: a connector named "${name}" exists`);
    throw err;
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ConnectorRow> {
    const row = isUuid(id) ? await this.deps.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("connector", id);
    return row;
  }

  private transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>): Promise<T> {
    return tenantWriteTransaction(this.deps.db, tenantId, fn);
  }

  private record(t: Transaction, ctx: TenantContext, action: AuditAction, before: ConnectorRow | null, after: ConnectorRow | null) {
    const subject = (after ?? before)!;
    return this.deps.audit.record(t, ctx, {
      action,
      entityType: "connector",
      entityId: subject.id,
      entityName: subject.name,
      before: before ? connectorSnapshot(toConnector(before, [])) : null,
      after: after ? connectorSnapshot(toConnector(after, [])) : null,
      entityVersion: null,
    });
  }
}
