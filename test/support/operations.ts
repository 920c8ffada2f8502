import type { AlertsPorts } from "../../src/alerts/alerts.js";
import type { DeliveryResult, Destination, Dispatcher, OutboundMessage } from "../../src/notifications/outbound.js";
import type { HealthAlertInput, HealthAlerts, RequestStats } from "../../src/observability/operational-signals.js";

/**
 * Small honest stand-ins for the operations ports the alerts consume, kept in one place so that the
 * tests switch to the real dispatcher, request statistics and health alerts by changing this file.
 */

const destinationKey = (d: Destination) => ("providerId" in d ? d.providerId : `${d.type}:${d.target}`);

/** Records what was sent; a destination told to fail refuses; a dedupeKey a destination accepted is not sent again. */
export class RecordingDispatcher implements Dispatcher {
  readonly sent: Array<{ tenantId: string; destination: Destination; message: OutboundMessage }> = [];
  private readonly failing = new Set<string>();
  private readonly accepted = new Set<string>();

  fail(destination: Destination, failing = true): void {
    if (failing) this.failing.add(destinationKey(destination));
    else this.failing.delete(destinationKey(destination));
  }

  async dispatch(tenantId: string, destinations: readonly Destination[], message: OutboundMessage): Promise<DeliveryResult[]> {
    return destinations.map((destination) => {
      const key = `${tenantId}:${destinationKey(destination)}:${message.dedupeKey}`;
      if (this.accepted.has(key)) return { destination, accepted: true, attempts: 0 };
      if (this.failing.has(destinationKey(destination))) return { destination, accepted: false, attempts: 3, error: "refused by the test" };
      this.accepted.add(key);
      this.sent.push({ tenantId, destination, message });
      return { destination, accepted: true, attempts: 1 };
    });
  }
}

/** Requests recorded by the test, queried as the shared statistics would be. */
export class RecordedRequestStats implements RequestStats {
  private readonly requests: Array<{ tenantId: string; at: Date; durationMs: number; status: number }> = [];
  /** Answers fail, as when the store behind the statistics is down. */
  unavailable = false;

  record(tenantId: string, at: Date, durationMs: number, status = 200): void {
    this.requests.push({ tenantId, at, durationMs, status });
  }

  private within(tenantId: string, from: Date, to: Date) {
    if (this.unavailable) throw new Error("request statistics unavailable");
    return this.requests.filter((r) => r.tenantId === tenantId && r.at >= from && r.at < to);
  }

  async latencyP99Ms(tenantId: string, from: Date, to: Date): Promise<number | null> {
    const durations = this.within(tenantId, from, to).map((r) => r.durationMs).sort((a, b) => a - b);
    return durations.length ? durations[Math.ceil(durations.length * 0.99) - 1] : null;
  }

  async http5xxCount(tenantId: string, from: Date, to: Date): Promise<number> {
    return this.within(tenantId, from, to).filter((r) => r.status >= 500).length;
  }
}

/** Open health alerts per tenant and key. */
export class RecordedHealthAlerts implements HealthAlerts {
  readonly open = new Map<string, HealthAlertInput>();

  async raise(tenantId: string, alert: HealthAlertInput): Promise<void> {
    this.open.set(`${tenantId}:${alert.key}`, alert);
  }

  async clear(tenantId: string, key: string): Promise<void> {
    this.open.delete(`${tenantId}:${key}`);
  }

  get(tenantId: string, key: string): HealthAlertInput | undefined {
    return this.open.get(`${tenantId}:${key}`);
  }
}

/** The tenants' notification providers, by id. */
export class ProviderIds {
  private readonly ids = new Map<string, Set<string>>();

  add(tenantId: string, id: string): string {
    if (!this.ids.has(tenantId)) this.ids.set(tenantId, new Set());
    this.ids.get(tenantId)!.add(id);
    return id;
  }

  async existing(tenantId: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    const mine = this.ids.get(tenantId) ?? new Set<string>();
    return new Set(ids.filter((id) => mine.has(id)));
  }
}

export interface TestOperations extends AlertsPorts {
  dispatcher: RecordingDispatcher;
  requestStats: RecordedRequestStats;
  healthAlerts: RecordedHealthAlerts;
  providers: ProviderIds;
}

export function createTestOperations(): TestOperations {
  return {
    dispatcher: new RecordingDispatcher(),
    requestStats: new RecordedRequestStats(),
    healthAlerts: new RecordedHealthAlerts(),
    providers: new ProviderIds(),
  };
}
