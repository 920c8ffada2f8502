import type { Logger } from "../platform/logger.js";
import type { DeliveryStore } from "./delivery-store.js";

/**
 * Keeps alive the leases of the deliveries this process is sending: one statement for all of them,
 * every third of a lease, while there are any. A process that dies stops renewing, and its rows
 * fall to the sweep once their leases run out; a live one keeps its rows however long a series
 * of retries takes.
 */
export class DeliveryLeases {
  private readonly held = new Map<string, { tenantId: string; id: string }>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly store: DeliveryStore,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  /** Holds a row's lease until the returned function is called. */
  hold(tenantId: string, id: string): () => void {
    const key = `${tenantId}\0${id}`;
    this.held.set(key, { tenantId, id });
    if (!this.timer && !this.closed) this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.leaseMs / 3))).unref();
    return () => {
      this.held.delete(key);
      if (!this.held.size) this.stopTimer();
    };
  }

  close(): void {
    this.closed = true;
    this.stopTimer();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async renew(): Promise<void> {
    try {
      await this.store.renewLeases([...this.held.values()], this.leaseMs);
    } catch (err) {
      // The next tick tries again; a lease that runs out meanwhile only lets the sweep send the row once more.
      this.logger.warn({ err, deliveries: this.held.size }, "outbound delivery leases not renewed");
    }
  }
}
