import type { DescMessage, Message } from "@bufbuild/protobuf";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";

/**
 * One catalog entity type as another domain may write it: through the very service methods the
 * routes call, inside the caller's transaction, so that validation, audit entries and change history
 * are those of a direct write (approvals apply their stored payloads this way: docs/approvals.md).
 */
export interface WriteTarget {
  /** The write message a JSON payload decodes into (the body of the type's create and update routes). */
  writeSchema: DescMessage;
  create(ctx: TenantContext, req: Message, t: Transaction): Promise<{ id: string }>;
  /** `req.id` names the entity; only the fields in `req.updateMask` change. */
  update(ctx: TenantContext, req: Message & { id: string }, t: Transaction): Promise<{ id: string }>;
  delete(ctx: TenantContext, id: string, t: Transaction): Promise<unknown>;
}

/** The entity types an approval can apply (spec 2.18), by their approval names. */
export const CATALOG_WRITE_TYPES = [
  "algorithmModel",
  "qualificationRule",
  "contactPolicy",
  "decisionFlow",
  "offer",
  "creative",
  "channel",
  "rankingProfile",
] as const;
export type CatalogWriteType = (typeof CATALOG_WRITE_TYPES)[number];
