import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";

export type RunStatus = "running" | "succeeded" | "failed";

export interface ScheduledRunRow {
  job_name: string;
  slot: Date;
  status: RunStatus;
  attempts: number;
  error: string | null;
  started_at: Date;
  finished_at: Date | null;
  lease_until: Date;
}

/** Why a claim was refused: the slot's current row says what another runner did or is doing. */
export type ClaimResult = { claimed: true; attempt: number } | { claimed: false; current: ScheduledRunRow };

/**
 * The `scheduled_runs` table (migration 0008): platform-level, not per tenant, because scheduled
 * jobs run across tenants. Times come from PostgreSQL's clock, so that processes whose clocks
 * disagree still agree on leases.
 */
export class ScheduledRunStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Takes the slot for one attempt, atomically: a new slot; a failed slot with attempts left; or a
   * running slot whose runner stopped renewing its lease (a crashed process). A slot that is
   * running, succeeded, or out of attempts is refused, with its row.
   */
  async claimAcrossTenants(jobName: string, slot: Date, maxAttempts: number, leaseMs: number): Promise<ClaimResult> {
    const [row] = await execReturning<{ attempts: number }>(
      this.db,
      `INSERT INTO scheduled_runs (job_name, slot, status, attempts, started_at, lease_until)
       VALUES ($1, $2, 'running', 1, now(), now() + $4 * interval '1 millisecond')
       ON CONFLICT (job_name, slot) DO UPDATE
         SET status = 'running', attempts = scheduled_runs.attempts + 1, started_at = now(),
             finished_at = NULL, lease_until = EXCLUDED.lease_until
         WHERE scheduled_runs.attempts < $3
           AND (scheduled_runs.status = 'failed' OR (scheduled_runs.status = 'running' AND scheduled_runs.lease_until < now()))
       RETURNING attempts`,
      [jobName, slot, maxAttempts, leaseMs],
    );
    if (row) return { claimed: true, attempt: row.attempts };
    const [current] = await selectRows<ScheduledRunRow>(this.db, `SELECT * FROM scheduled_runs WHERE job_name = $1 AND slot = $2`, [jobName, slot]);
    return { claimed: false, current };
  }

  /**
   * Takes an interrupted slot (see interruptedAcrossTenants) for one more attempt, atomically and
   * only while it still is one: failed with `interruptedError` or running under a lease that ran
   * out, the newest of its job, with attempts left. A list read before a long run may be stale.
   */
  async claimInterruptedAcrossTenants(jobName: string, slot: Date, maxAttempts: number, leaseMs: number, interruptedError: string): Promise<number | null> {
    const [row] = await execReturning<{ attempts: number }>(
      this.db,
      `UPDATE scheduled_runs c SET status = 'running', attempts = c.attempts + 1, started_at = now(), finished_at = NULL,
         lease_until = now() + $4 * interval '1 millisecond'
       WHERE c.job_name = $1 AND c.slot = $2 AND c.attempts < $3
         AND ${interrupted("$5")}
         AND NOT EXISTS (SELECT 1 FROM scheduled_runs n WHERE n.job_name = c.job_name AND n.slot > c.slot)
       RETURNING c.attempts`,
      [jobName, slot, maxAttempts, leaseMs, interruptedError],
    );
    return row ? row.attempts : null;
  }

  /** Ends an attempt that never started (a stop refused it) as failed with `error`, and gives the attempt back. */
  async releaseAcrossTenants(jobName: string, slot: Date, attempt: number, error: string): Promise<void> {
    await this.db.query(
      `UPDATE scheduled_runs SET status = 'failed', error = $4, finished_at = now(), attempts = attempts - 1
       WHERE job_name = $1 AND slot = $2 AND attempts = $3 AND status = 'running'`,
      { bind: [jobName, slot, attempt, error] },
    );
  }

  /** Keeps a long attempt's claim; false when another runner has taken the slot over meanwhile. */
  async renewLeaseAcrossTenants(jobName: string, slot: Date, attempt: number, leaseMs: number): Promise<boolean> {
    const rows = await execReturning(
      this.db,
      `UPDATE scheduled_runs SET lease_until = now() + $4 * interval '1 millisecond'
       WHERE job_name = $1 AND slot = $2 AND attempts = $3 AND status = 'running' RETURNING 1`,
      [jobName, slot, attempt, leaseMs],
    );
    return rows.length > 0;
  }

  /** Slots of these jobs from `since` on that a runner claimed and has not finished: running, or its process stopped. */
  async unfinishedAcrossTenants(jobNames: readonly string[], since: Date): Promise<Array<{ job_name: string; slot: Date; lease_until: Date }>> {
    return selectRows(
      this.db,
      `SELECT job_name, slot, lease_until FROM scheduled_runs WHERE status = 'running' AND job_name = ANY($1) AND slot >= $2 ORDER BY slot`,
      [jobNames, since],
    );
  }

  /**
   * Slots from `since` to `until`, of the jobs named `namePrefix` + anything, that are the newest of their
   * job and did not end on their own: failed with `interruptedError`, or running under a lease that
   * ran out (their process died). A job whose newer slot was claimed since has none.
   */
  async interruptedAcrossTenants(namePrefix: string, since: Date, until: Date, interruptedError: string): Promise<Array<{ job_name: string; slot: Date }>> {
    // The candidates come from the index of slots that did not succeed (migration 0036); whether a
    // newer slot of the same job exists, from the primary key.
    return selectRows(
      this.db,
      `SELECT c.job_name, c.slot FROM scheduled_runs c
       WHERE c.status <> 'succeeded' AND c.slot BETWEEN $2 AND $3 AND starts_with(c.job_name, $1)
         AND ${interrupted("$4")}
         AND NOT EXISTS (SELECT 1 FROM scheduled_runs n WHERE n.job_name = c.job_name AND n.slot > c.slot AND n.slot <= $3)
       ORDER BY c.slot`,
      [namePrefix, since, until, interruptedError],
    );
  }

  /** Forgets slots before `before` that are over, or whose runner died; returns how many. A live run stays. */
  async deleteFinishedBeforeAcrossTenants(before: Date): Promise<number> {
    const rows = await execReturning(
      this.db,
      `DELETE FROM scheduled_runs WHERE slot < $1 AND (status <> 'running' OR lease_until < now()) RETURNING 1`,
      [before],
    );
    return rows.length;
  }

  /** Records the attempt's end, unless a later attempt has taken the slot over. */
  async finishAcrossTenants(jobName: string, slot: Date, attempt: number, status: "succeeded" | "failed", error: string | null): Promise<void> {
    await this.db.query(
      `UPDATE scheduled_runs SET status = $4, error = $5, finished_at = now()
       WHERE job_name = $1 AND slot = $2 AND attempts = $3 AND status = 'running'`,
      { bind: [jobName, slot, attempt, status, error] },
    );
  }
}

/** A slot `c` that did not end on its own: failed with the error in parameter `errorParam`, or running under a lease that ran out. */
const interrupted = (errorParam: string) => `((c.status = 'failed' AND c.error = ${errorParam}) OR (c.status = 'running' AND c.lease_until < now()))`;
