import type { Sequelize } from "sequelize";
import { ContentService as ContentServiceDesc } from "../../gen/decisioning/v1/content_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { ContentService } from "./content-service.js";
import { ContentStore } from "./content-store.js";
import type { PublishedContentReader } from "./published-content.js";

export interface ContentOptions {
  db: Sequelize;
  audit: AuditLog;
  /** The decisions' snapshot invalidation (decisions.configChanged). */
  configChanged(tenantId: string): void;
}

/** Content items, built once at start-up: their routes, and the read models creatives and Recommend use. */
export function createContent(o: ContentOptions): {
  services: ServiceRegistration[];
  /** Which of `ids` a creative may name (the tenant's items, not archived). */
  referable(tenantId: string, ids: readonly string[]): Promise<Set<string>>;
  published: PublishedContentReader;
} {
  const store = new ContentStore(o.db);
  const content = new ContentService({ store, audit: o.audit, configChanged: o.configChanged });
  return {
    services: [
      {
        service: ContentServiceDesc,
        impl: {
          listContent: (ctx, req) => content.listContent(ctx, req),
          createContent: (ctx, req) => content.createContent(ctx, req),
          getContent: (ctx, req) => content.getContent(ctx, req),
          updateContent: (ctx, req) => content.updateContent(ctx, req),
          archiveContent: (ctx, req) => content.archiveContent(ctx, req),
          submitContent: (ctx, req) => content.submitContent(ctx, req),
          approveContent: (ctx, req) => content.approveContent(ctx, req),
          rejectContent: (ctx, req) => content.rejectContent(ctx, req),
          publishContent: (ctx, req) => content.publishContent(ctx, req),
          listContentVersions: (ctx, req) => content.listContentVersions(ctx, req),
          revertContent: (ctx, req) => content.revertContent(ctx, req),
        },
      },
    ],
    referable: (tenantId, ids) => store.referable(tenantId, ids),
    published: (tenantId, ids) => store.published(tenantId, ids),
  };
}
