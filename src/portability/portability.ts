import type { Sequelize } from "sequelize";
import { PortabilityService as PortabilityServiceDesc } from "../../gen/decisioning/v1/portability_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { CustomerErasure, type ErasureDeps } from "./customer-erasure.js";
import { PortabilityService, type PortabilityDeps } from "./portability-service.js";
import { PortabilityStore } from "./portability-store.js";

export interface PortabilityOptions extends Omit<ErasureDeps, "db" | "audit"> {
  db: Sequelize;
  audit: AuditLog;
  configChanged(tenantId: string): void;
  afterImport?: PortabilityDeps["afterImport"];
}

/** Export, import and GDPR erasure, built once at start-up. */
export function createPortability(o: PortabilityOptions): { services: ServiceRegistration[] } {
  const service = new PortabilityService({ db: o.db, store: new PortabilityStore(o.db), audit: o.audit, configChanged: o.configChanged, afterImport: o.afterImport });
  const erasure = new CustomerErasure(o);
  return {
    services: [
      {
        service: PortabilityServiceDesc,
        impl: {
          exportFull: (ctx) => service.exportFull(ctx),
          exportDecisionFlow: (ctx, req) => service.exportDecisionFlow(ctx, req),
          exportModel: (ctx, req) => service.exportModel(ctx, req),
          importConfiguration: (ctx, req) => service.importConfiguration(ctx, req),
          eraseCustomer: (ctx, req) => erasure.erase(ctx, req),
        },
      },
    ],
  };
}
