import SCIMMY from "scimmy";
import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { Bus } from "../platform/bus.js";
import { ROLES, type RoleName, type TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { IDENTITY_CHANNEL } from "../identity/identity-service.js";
import { ScimFilter } from "./scim-filter.js";
import {
  groupResource,
  isGroupId,
  projection,
  scimError,
  shapeGroup,
  shapeUser,
  toDirectoryWrite,
  toScimGroup,
  toScimUser,
  userResource,
} from "./scim-mapper.js";
import type { DirectoryUserRow, ScimStore } from "./scim-store.js";

/** ServiceProviderConfig's filter.maxResults: the largest page a list answers. */
export const SCIM_MAX_RESULTS = 200;
export const SCIM_DEFAULT_COUNT = 100;

/** Query parameters of a GET: a list's filter and page, and any GET's projection. */
export interface ListQuery {
  filter?: string;
  startIndex?: string;
  count?: string;
  attributes?: string;
  excludedAttributes?: string;
}

type ScimJson = Record<string, unknown>;

/** Runs a scimmy schema or message step; its TypeErrors are the request's faults (400 invalidValue). */
async function shaped<T>(step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof TypeError) throw scimError(400, "invalidValue", err.message);
    throw err;
  }
}

/**
 * Entra ID sends booleans as the strings "True" and "False" (`{"op": "Replace", "path": "active",
 * "value": "False"}`); RFC 7644 wants JSON booleans, and scimmy's schema refuses strings. Only
 * `active` is a writable boolean of ours, so only it is read leniently.
 */
function lenientBooleans(message: unknown): unknown {
  const ops = (message as { Operations?: unknown })?.Operations;
  if (!Array.isArray(ops)) return message;
  const bool = (v: unknown) => (typeof v === "string" && /^(true|false)$/i.test(v) ? v.toLowerCase() === "true" : v);
  return {
    ...(message as object),
    Operations: ops.map((op) => {
      if (!op || typeof op !== "object") return op;
      const { path, value } = op as { path?: unknown; value?: unknown };
      if (typeof path === "string" && path.toLowerCase() === "active") return { ...op, value: bool(value) };
      if (path === undefined && value && typeof value === "object" && "active" in value) {
        return { ...op, value: { ...value, active: bool((value as { active: unknown }).active) } };
      }
      return op;
    }),
  };
}

function snapshot(row: DirectoryUserRow): Record<string, unknown> {
  return { userName: row.user_name ?? row.email, displayName: row.name, active: !row.disabled, role: row.role, externalId: row.external_id };
}

/**
 * SCIM 2.0 provisioning (spec 5.1) of a tenant's users and of the three roles as groups. Every
 * change commits with its audit entry under the tenant's write lock, then tells every process's
 * authenticator to drop the user (and revoked keys) before answering, so that a deactivation or a
 * role change bites on the next request anywhere.
 */
export class ScimService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: ScimStore,
    private readonly audit: AuditLog,
    private readonly bus: Bus,
  ) {}

  // ---- Users ----------------------------------------------------------------------------------

  async listUsers(ctx: TenantContext, query: ListQuery): Promise<object> {
    const rows = await this.store.listUsers(ctx.tenantId);
    const only = projection("User", query);
    return this.page(rows.map(toScimUser), "User", query, (json) => shapeUser(json, only));
  }

  async getUser(ctx: TenantContext, id: string, query: ListQuery = {}): Promise<object> {
    return userResource(await this.liveUser(ctx, id), projection("User", query));
  }

  /** POST: a new user, or a deleted one with this userName or address brought back (docs/scim.md). */
  async createUser(ctx: TenantContext, body: unknown): Promise<object> {
    const write = toDirectoryWrite(await shaped(() => new SCIMMY.Schemas.User(body, "in")));
    const { row, changed } = await this.write(ctx, async (t) => {
      const deleted = await this.store.findDeleted(ctx.tenantId, write.userName, write.email, t);
      const row = deleted ? await this.store.updateUser(ctx.tenantId, deleted.id, write, t, true) : await this.store.insertUser(ctx.tenantId, newId(), write, t);
      await this.record(t, ctx, deleted ? "restore" : "create", row!, deleted ? snapshot(deleted) : null);
      return { row: row!, changed: deleted !== null };
    });
    if (changed) await this.forget(row);
    return userResource(row);
  }

  async replaceUser(ctx: TenantContext, id: string, body: unknown): Promise<object> {
    const write = toDirectoryWrite(await shaped(() => new SCIMMY.Schemas.User(body, "in")));
    return this.update(ctx, id, async () => write);
  }

  /** PATCH (RFC 7644 3.5.2) through scimmy's PatchOp, Okta's and Entra's path forms included. */
  async patchUser(ctx: TenantContext, id: string, body: unknown): Promise<object> {
    const patch = await shaped(() => new SCIMMY.Messages.PatchOp(lenientBooleans(body) as never));
    return this.update(ctx, id, async (current) => {
      const patched = await shaped(() => patch.apply(userResource(current)));
      return patched ? toDirectoryWrite(patched as never) : null;
    });
  }

  /** DELETE: access ends (disabled, keys revoked) and the row stays, so audit entries keep naming the user. */
  async deleteUser(ctx: TenantContext, id: string): Promise<void> {
    const { row, keys } = await this.write(ctx, async (t) => {
      const row = isUuid(id) ? await this.store.softDeleteUser(ctx.tenantId, id, t) : null;
      if (!row) throw scimError(404, null, `User ${id} not found`);
      const keys = await this.store.revokeKeysOf(ctx.tenantId, row.id, "deleted by the directory (SCIM)", t);
      await this.record(t, ctx, "soft_delete", row, snapshot(row));
      return { row, keys };
    });
    await this.forget(row, keys);
  }

  // ---- Groups (the roles) -----------------------------------------------------------------------

  async listGroups(ctx: TenantContext, query: ListQuery): Promise<object> {
    const only = projection("Group", query);
    const groups = await Promise.all(ROLES.map(async (role) => toScimGroup(role, await this.store.usersWithRole(ctx.tenantId, role))));
    return this.page(groups, "Group", query, (json) => shapeGroup(json, only));
  }

  async getGroup(ctx: TenantContext, id: string, query: ListQuery = {}): Promise<object> {
    if (!isGroupId(id)) throw scimError(404, null, `Group ${id} not found`);
    return groupResource(id, await this.store.usersWithRole(ctx.tenantId, id), projection("Group", query));
  }

  /** PUT: the group's members are exactly these users; members left out drop to viewer. */
  async replaceGroup(ctx: TenantContext, id: string, body: unknown): Promise<object> {
    const group = await shaped(() => new SCIMMY.Schemas.Group(body, "in"));
    return this.changeMembers(ctx, id, async () => memberIds(group));
  }

  /** PATCH: add and remove members (`members[value eq "..."]` and value-list forms alike). */
  async patchGroup(ctx: TenantContext, id: string, body: unknown): Promise<object> {
    const patch = await shaped(() => new SCIMMY.Messages.PatchOp(body as never));
    return this.changeMembers(ctx, id, async (role, members) => {
      const patched = await shaped(() => patch.apply(groupResource(role, members)));
      return patched ? memberIds(patched) : null;
    });
  }

  // ---- Shared steps -------------------------------------------------------------------------------

  private async liveUser(ctx: TenantContext, id: string, t?: Transaction): Promise<DirectoryUserRow> {
    const row = isUuid(id) ? await this.store.findUser(ctx.tenantId, id, t) : null;
    if (!row) throw scimError(404, null, `User ${id} not found`);
    return row;
  }

  /** PUT and PATCH: the new state from the current one (null: nothing changed), written with its audit entry. */
  private async update(
    ctx: TenantContext,
    id: string,
    next: (current: DirectoryUserRow) => Promise<ReturnType<typeof toDirectoryWrite> | null>,
  ): Promise<object> {
    const { row, changed } = await this.write(ctx, async (t) => {
      const current = await this.liveUser(ctx, id, t);
      const write = await next(current);
      if (!write) return { row: current, changed: false };
      const row = (await this.store.updateUser(ctx.tenantId, current.id, write, t))!;
      await this.record(t, ctx, "update", row, snapshot(current));
      return { row, changed: row.token_version !== current.token_version };
    });
    if (changed) await this.forget(row);
    return userResource(row);
  }

  /**
   * Sets the group's role on the users `next` names (each a live user of the tenant, else 400) and
   * viewer on the members it no longer names; one audit entry per user whose role moved.
   */
  private async changeMembers(
    ctx: TenantContext,
    id: string,
    next: (role: RoleName, members: DirectoryUserRow[]) => Promise<string[] | null>,
  ): Promise<object> {
    if (!isGroupId(id)) throw scimError(404, null, `Group ${id} not found`);
    const role = id;
    const { members, moved } = await this.write(ctx, async (t) => {
      const before = await this.store.usersWithRole(ctx.tenantId, role, t);
      const wanted = await next(role, before);
      if (!wanted) return { members: before, moved: [] };
      const live = new Map((await this.store.listUsers(ctx.tenantId, t)).map((u) => [u.id, u]));
      const unknown = wanted.find((m) => !live.has(m));
      if (unknown) throw scimError(400, "invalidValue", `members: ${unknown} is not a user of this tenant`);
      const kept = new Set(wanted);
      const moved = [
        ...(await this.store.setRole(ctx.tenantId, wanted, role, t)),
        ...(role === "viewer" ? [] : await this.store.setRole(ctx.tenantId, before.filter((m) => !kept.has(m.id)).map((m) => m.id), "viewer", t)),
      ];
      for (const row of moved) {
        const old = live.get(row.id)!;
        await this.audit.record(t, ctx, {
          action: "update",
          entityType: "user",
          entityId: row.id,
          entityName: row.user_name ?? row.email,
          before: snapshot(old),
          after: snapshot(row),
          entityVersion: null,
          changes: { role: { from: old.role, to: row.role }, via: `SCIM group ${role}` },
        });
      }
      return { members: await this.store.usersWithRole(ctx.tenantId, role, t), moved };
    });
    for (const row of moved) await this.forget(row);
    return groupResource(role, members);
  }

  /** One transaction under the tenant's write lock; a userName, address or externalId taken is 409 uniqueness. */
  private async write<T>(ctx: TenantContext, fn: (t: Transaction) => Promise<T>): Promise<T> {
    try {
      return await tenantWriteTransaction(this.db, ctx.tenantId, fn);
    } catch (err) {
      if (isUniqueViolation(err)) throw scimError(409, "uniqueness", "userName, e-mail address or externalId is already taken by another user of this tenant");
      throw err;
    }
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "restore" | "soft_delete", row: DirectoryUserRow, before: Record<string, unknown> | null) {
    return this.audit.record(t, ctx, {
      action,
      entityType: "user",
      entityId: row.id,
      entityName: row.user_name ?? row.email,
      before,
      after: action === "soft_delete" ? null : snapshot(row),
      entityVersion: null,
      changes: { via: "SCIM" },
    });
  }

  /** Every process's authenticator drops the user (and revoked keys) before the caller hears back. */
  private async forget(row: DirectoryUserRow, keyHashes: readonly string[] = []): Promise<void> {
    await Promise.all([
      this.bus.publish(IDENTITY_CHANNEL, `user:${row.tenant_id}:${row.id}`, { confirmed: true }),
      ...keyHashes.map((hash) => this.bus.publish(IDENTITY_CHANNEL, `key:${hash}`, { confirmed: true })),
    ]);
  }

  /** filter, then startIndex (1-based) and count (RFC 7644 3.4.2.4), over the resources' JSON. */
  private page(all: ScimJson[], resource: "User" | "Group", query: ListQuery, shape: (r: ScimJson) => unknown): ScimJson {
    const startIndex = Math.max(1, integerParam(query.startIndex, "startIndex") ?? 1);
    const count = Math.min(SCIM_MAX_RESULTS, Math.max(0, integerParam(query.count, "count") ?? SCIM_DEFAULT_COUNT));
    let matched = all;
    if (query.filter !== undefined && query.filter.trim()) {
      const filter = ScimFilter.parse(query.filter, resource);
      const views = all.map((r) => ({ view: filter.caseless(r), resource: r }));
      const hits = new Set(filter.match(views.map((v) => v.view)));
      matched = views.filter((v) => hits.has(v.view)).map((v) => v.resource);
    }
    const Resources = matched.slice(startIndex - 1, startIndex - 1 + count).map(shape);
    return { schemas: ["urn:ietf:params:scim:api:messages:2.0:ListResponse"], totalResults: matched.length, startIndex, itemsPerPage: Resources.length, Resources };
  }
}

function integerParam(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^-?\d{1,9}$/.test(value)) throw scimError(400, "invalidValue", `${name}: must be an integer`);
  return Number(value);
}

function memberIds(group: { members?: Array<{ value?: string }> }): string[] {
  return [...new Set((group.members ?? []).map((m) => m.value).filter((v): v is string => typeof v === "string"))];
}
