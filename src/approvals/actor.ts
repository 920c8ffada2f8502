import type { TenantContext } from "../platform/context.js";

/**
 * Who is acting, as one stable string, for the self-approval and duplicate-approver rules: the
 * user, else the OAuth client, else the infrastructure key. Names are not identities; ids are.
 */
export function actorId(ctx: TenantContext): string {
  if (ctx.userId) return ctx.userId;
  if (ctx.principal.kind === "oauth_client") return `oauth_client:${ctx.principal.clientId}`;
  return ctx.principal.kind;
}
