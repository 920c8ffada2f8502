import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { Authenticator } from "../identity/authenticator.js";
import type { Bus } from "../platform/bus.js";
import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { createScimRoute } from "./scim-route.js";
import { ScimService } from "./scim-service.js";
import { ScimStore } from "./scim-store.js";

export interface ScimOptions {
  db: Sequelize;
  audit: AuditLog;
  bus: Bus;
  authenticator: Authenticator;
  rateLimits: RateLimitPolicy;
  logger: Logger;
  bodyLimitBytes: number;
}

/** SCIM 2.0 provisioning (spec 5.1, docs/scim.md): one HTTP route outside protobuf. */
export function createScim(o: ScimOptions): { route: HttpRoute; service: ScimService } {
  const service = new ScimService(o.db, new ScimStore(o.db), o.audit, o.bus);
  return { service, route: createScimRoute(service, o.authenticator, o.rateLimits, o.logger, o.bodyLimitBytes) };
}
