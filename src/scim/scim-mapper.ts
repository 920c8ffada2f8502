import SCIMMY from "scimmy";
import { ROLES, type RoleName } from "../platform/context.js";
import type { DirectoryUserRow, DirectoryUserWrite } from "./scim-store.js";

/** Where the SCIM resources live (spec 5.1); `meta.location` is built from it. */
export const SCIM_BASE_PATH = "/api/v1/scim/v2";
const MAX_TEXT = 255;

/** A SCIM error (RFC 7644 3.12), in scimmy's type: `status` and `scimType` travel to the error body. */
export function scimError(status: number, scimType: string | null, detail: string): InstanceType<typeof SCIMMY.Types.Error> {
  return new SCIMMY.Types.Error(status, scimType as string, detail);
}

/** A users row as the SCIM User resource (RFC 7643 4.1), before scimmy's schema shapes it. */
export function toScimUser(row: DirectoryUserRow): Record<string, unknown> {
  const name: Record<string, string> = { formatted: row.name };
  if (row.given_name) name.givenName = row.given_name;
  if (row.family_name) name.familyName = row.family_name;
  return {
    id: row.id,
    ...(row.external_id ? { externalId: row.external_id } : {}),
    userName: row.user_name ?? row.email,
    name,
    displayName: row.name,
    emails: [{ value: row.email, type: "work", primary: true }],
    active: !row.disabled,
    // Read-only: the one group (role) the user is a member of.
    groups: [{ value: row.role, display: row.role, type: "direct" }],
    meta: { resourceType: "User", created: row.created_at, lastModified: row.updated_at },
  };
}

/** The `attributes` or `excludedAttributes` a request asked for (RFC 7644 3.4.2.5), as scimmy reads them. */
export type Projection = InstanceType<typeof SCIMMY.Types.Filter> | undefined;

export function projection(resource: "User" | "Group", query: { attributes?: string; excludedAttributes?: string }): Projection {
  if (!query.attributes && !query.excludedAttributes) return undefined;
  const config = query.attributes ? { attributes: query.attributes } : { excludedAttributes: query.excludedAttributes };
  return (resource === "User" ? new SCIMMY.Resources.User(undefined, config) : new SCIMMY.Resources.Group(undefined, config)).attributes as Projection;
}

/** A User resource's JSON through scimmy's User schema (types checked, `password` never out), projected when asked. */
export function shapeUser(json: Record<string, unknown>, only?: Projection): InstanceType<typeof SCIMMY.Schemas.User> {
  return new SCIMMY.Schemas.User(json, "out", `${SCIM_BASE_PATH}/Users`, only);
}

/** A users row as a SCIM resource: the response body and what PATCH operations apply to. */
export function userResource(row: DirectoryUserRow, only?: Projection): InstanceType<typeof SCIMMY.Schemas.User> {
  return shapeUser(toScimUser(row), only);
}

interface ScimUserFields {
  userName?: string;
  externalId?: string;
  displayName?: string;
  active?: boolean;
  name?: { formatted?: string; givenName?: string; familyName?: string };
  emails?: Array<{ value?: string; type?: string; primary?: boolean }>;
}

function text(value: string | undefined, attribute: string): string | null {
  const trimmed = value?.trim();
  if (!trimmed) return null;
  if (trimmed.length > MAX_TEXT) throw scimError(400, "invalidValue", `${attribute}: must be at most ${MAX_TEXT} characters`);
  return trimmed;
}

/**
 * What a SCIM User (already shaped by scimmy's schema: types checked, `userName` present) writes
 * on a users row. The address is the primary e-mail, else the work one, else the first, else the
 * userName when it is an address; the display name is displayName, else name.formatted, else the
 * given and family names, else the userName. Attributes we do not keep (addresses, phone numbers,
 * the enterprise extension) are accepted and dropped (docs/scim.md).
 */
export function toDirectoryWrite(resource: ScimUserFields): DirectoryUserWrite {
  const userName = text(resource.userName, "userName");
  if (!userName) throw scimError(400, "invalidValue", "userName: is required");
  const emails = (resource.emails ?? []).filter((e) => e.value?.trim());
  const chosen = emails.find((e) => e.primary) ?? emails.find((e) => e.type?.toLowerCase() === "work") ?? emails[0];
  const email = text(chosen?.value, "emails.value") ?? (userName.includes("@") ? userName : null);
  if (!email) throw scimError(400, "invalidValue", "emails: an e-mail address is required when userName is not one");
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw scimError(400, "invalidValue", `emails.value: ${JSON.stringify(email)} is not an e-mail address`);
  const givenName = text(resource.name?.givenName, "name.givenName");
  const familyName = text(resource.name?.familyName, "name.familyName");
  const name =
    text(resource.displayName, "displayName") ??
    text(resource.name?.formatted, "name.formatted") ??
    ([givenName, familyName].filter(Boolean).join(" ") || userName);
  return {
    userName,
    email,
    name,
    givenName,
    familyName,
    externalId: text(resource.externalId, "externalId"),
    disabled: resource.active === false,
  };
}

/** The groups are the three roles (spec 5.3), named and identified by the role. */
export function isGroupId(id: string): id is RoleName {
  return (ROLES as readonly string[]).includes(id);
}

export function toScimGroup(role: RoleName, members: readonly DirectoryUserRow[]): Record<string, unknown> {
  return {
    id: role,
    displayName: role,
    members: members.map((m) => ({ value: m.id, display: m.user_name ?? m.email, type: "User" })),
    meta: { resourceType: "Group" },
  };
}

export function shapeGroup(json: Record<string, unknown>, only?: Projection): InstanceType<typeof SCIMMY.Schemas.Group> {
  return new SCIMMY.Schemas.Group(json, "out", `${SCIM_BASE_PATH}/Groups`, only);
}

export function groupResource(role: RoleName, members: readonly DirectoryUserRow[], only?: Projection): InstanceType<typeof SCIMMY.Schemas.Group> {
  return shapeGroup(toScimGroup(role, members), only);
}
