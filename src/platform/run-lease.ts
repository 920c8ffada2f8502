import type { Logger } from "./logger.js";

/** The error of a run that the lease sweep finished while its process was still running it. */
export const LEASE_LOST_ERROR = "stopped: the run's lease ran out and it was finished as failed elsewhere";

export interface RunLeaseOptions {
  /** Extends the run's lease by `leaseMs`; false once the run has been finished by someone else. */
  renew(): Promise<boolean>;
  /** How long the lease holds without renewal: it is renewed every third of it. */
  leaseMs: number;
  logger: Logger;
  /** What the run is, for the log: `ingestion run`, `report run`. */
  kind: string;
  /** The reason `lost` aborts with; LEASE_LOST_ERROR by default. */
  lostError?: string;
  runId: string;
}

/**
 * The heartbeat of a run in flight (ingestion runs and report runs; docs/ingestion.md, "Runs whose
 * process stopped"): it renews the run's lease so that the sweep leaves the run alone while this
 * process is alive. When a renewal
 * finds the run already finished (its lease ran out, a stalled event loop or an unreachable
 * database, and the sweep took it), `lost` aborts: its outcome is recorded already, so the run stops.
 * A failed renewal is only logged: the next one may succeed well before the lease runs out.
 */
export class RunLease {
  private readonly lostController = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: RunLeaseOptions) {
    this.timer = setInterval(() => this.beat(), Math.max(1, Math.floor(o.leaseMs / 3)));
    // A heartbeat is no reason for the process to stay up.
    this.timer.unref();
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  private beat(): void {
    // A slow renewal is not stacked on: the next beat tries again.
    if (this.renewing) return;
    this.renewing = this.o
      .renew()
      .then(
        (held) => {
          if (!held && !this.stopped) this.lostController.abort(new Error(this.o.lostError ?? LEASE_LOST_ERROR));
        },
        (err: unknown) => this.o.logger.warn({ err, runId: this.o.runId, kind: this.o.kind }, "run lease not renewed"),
      )
      .finally(() => {
        this.renewing = null;
      });
  }

  /** Ends the heartbeat; resolves once no renewal is under way, so none outlives the run's pool. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.renewing;
  }
}
