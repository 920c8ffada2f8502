/**
 * What the observability domain offers others: request statistics shared by every process (for
 * the `latency_p99` and `http_5xx_count` alert metrics) and the system-health alerts that monitors
 * raise and clear (spec 4.20 `GET /api/v1/system-health`, 6).
 */

/** Per-tenant request statistics over a window, kept outside any one process (Redis or PostgreSQL). */
export interface RequestStats {
  /** The 99th percentile of request duration in ms over [from, to), or null when there were no requests. */
  latencyP99Ms(tenantId: string, from: Date, to: Date): Promise<number | null>;
  /** Answers with a 5xx status over [from, to). */
  http5xxCount(tenantId: string, from: Date, to: Date): Promise<number>;
}

export type HealthSeverity = "info" | "warning" | "error";

export interface HealthAlertInput {
  /** Stable per condition, e.g. `funnel:suppression_rate`: raising it again updates the open alert. */
  key: string;
  severity: HealthSeverity;
  message: string;
  details?: Record<string, unknown>;
}

/** Open health alerts per tenant; raising is idempotent per key, clearing resolves the open one. */
export interface HealthAlerts {
  raise(tenantId: string, alert: HealthAlertInput): Promise<void>;
  clear(tenantId: string, key: string): Promise<void>;
}
