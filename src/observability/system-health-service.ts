import { create } from "@bufbuild/protobuf";
import {
  ListHealthAlertsResponseSchema,
  type ListHealthAlertsRequest,
  type ListHealthAlertsResponse,
} from "../../gen/decisioning/v1/observability_pb.js";
import type { TenantContext } from "../platform/context.js";
import { invalidField, invalidFields, type FieldViolation } from "../platform/errors.js";
import { pageSize } from "../platform/pagination.js";
import { newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import type { HealthAlertInput, HealthAlerts, HealthSeverity } from "./operational-signals.js";
import { toHealthAlert } from "./health-alert-mapper.js";
import type { HealthAlertStatus, HealthAlertStore } from "./health-alert-store.js";

const SEVERITIES: readonly HealthSeverity[] = ["info", "warning", "error"];
const STATUS_FILTERS: Record<string, HealthAlertStatus | null> = { open: "open", resolved: "resolved", all: null };
const MAX_KEY = 200;
const MAX_LIST = 100;

/**
 * System health (spec 4.20, 6): monitors raise and clear health alerts through the HealthAlerts
 * port, and any user of the tenant reads them with `GET /api/v1/system-health` (docs/observability.md).
 */
export class SystemHealthService implements HealthAlerts {
  constructor(
    private readonly store: HealthAlertStore,
    private readonly logger: Logger,
  ) {}

  /** Idempotent per key: raising an open alert again updates its severity, message and details. */
  async raise(tenantId: string, alert: HealthAlertInput): Promise<void> {
    const violations: FieldViolation[] = [];
    if (!alert.key || alert.key.length > MAX_KEY) violations.push({ field: "key", message: `must be 1 to ${MAX_KEY} characters` });
    if (!SEVERITIES.includes(alert.severity)) violations.push({ field: "severity", message: `must be one of ${SEVERITIES.join(", ")}` });
    if (!alert.message) violations.push({ field: "message", message: "is required" });
    if (violations.length) throw invalidFields(violations);
    const { row, opened } = await this.store.raise(tenantId, newId(), alert);
    // Operators see a new condition in the log once, not on every monitor run that finds it again.
    if (opened) this.logger.warn({ tenantId, key: row.key, severity: row.severity, alertId: row.id }, `health alert raised: ${row.message}`);
  }

  async clear(tenantId: string, key: string): Promise<void> {
    if (await this.store.resolve(tenantId, key)) this.logger.info({ tenantId, key }, "health alert resolved");
  }

  async listHealthAlerts(ctx: TenantContext, req: ListHealthAlertsRequest): Promise<ListHealthAlertsResponse> {
    const statusName = req.status || "open";
    if (!Object.hasOwn(STATUS_FILTERS, statusName)) throw invalidField("status", `must be one of ${Object.keys(STATUS_FILTERS).join(", ")}`);
    const limit = pageSize(req.limit, MAX_LIST, 50);
    const rows = await this.store.list(ctx.tenantId, STATUS_FILTERS[statusName], limit);
    return create(ListHealthAlertsResponseSchema, { alerts: rows.map(toHealthAlert) });
  }
}
