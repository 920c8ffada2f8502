import { prepareSnapshot, type DecisionSnapshot, type ScoreTask, type SnapshotConfig } from "../core/index.js";
import type { DecisionTrace } from "../../gen/decisioning/v1/decisions_pb.js";
import type { Logger } from "../platform/logger.js";
import { TtlCache } from "../platform/ttl-cache.js";
import type { DecisionStore } from "./decision-store.js";
import { renderTrace } from "./trace-record.js";
import { isStoredExplanation, storedExplanationTrace } from "./stored-explanation.js";

/**
 * Reads a trace by re-running its decision (trace-record.ts), or, for a trace written before replay
 * records, by reading its stored explanation (stored-explanation.ts). Configuration versions never change,
 * so their compiled snapshots are kept for a while: reading the traces of one hour re-compiles
 * nothing.
 */
export class TraceReader {
  private readonly snapshots = new TtlCache<DecisionSnapshot | null>(10 * 60_000, 32);

  constructor(
    private readonly store: DecisionStore,
    private readonly logger: Logger,
  ) {}

  /** The trace of spec 2.16 by trace id or recommendation id; null when there is none. */
  async get(tenantId: string, id: string): Promise<DecisionTrace | null> {
    return (await this.replay(tenantId, id))?.trace ?? null;
  }

  /**
   * The trace and the score task its decision scored, for explanations (src/explanations). A trace
   * written before replay records has no configuration to rebuild the task from: `scoreTask` is null.
   */
  async replay(tenantId: string, id: string): Promise<ReplayedTrace | null> {
    const row = await this.store.trace(tenantId, id);
    if (!row) return null;
    // Written before replay records (migration 0006): the explanation itself, served as stored.
    if (isStoredExplanation(row.trace)) return { trace: storedExplanationTrace(row, row.trace), scoreTask: null };
    const hash = row.policy_version_hash;
    const snapshot = await this.snapshots.get(`${tenantId} ${hash}`, async () => {
      const config = await this.store.policy(tenantId, hash);
      return config ? prepareSnapshot(config as SnapshotConfig) : null;
    });
    if (!snapshot) {
      // The trace writer stores a version before any trace naming it, so this is damage, not a race.
      throw new Error(`decision trace ${row.id} names configuration ${hash}, which is not stored`);
    }
    const { trace, decision, scoreTask } = renderTrace(row, row.trace, snapshot);
    const replayed = decision.offers.map((o) => o.offerId).join(",");
    if (!row.trace.refusals.length && replayed !== row.trace.selectedOffers.map((o) => o.offerId).join(",")) {
      this.logger.warn({ traceId: row.id, policyVersionHash: hash }, "decision trace replay chose other offers than the decision did");
    }
    return { trace, scoreTask };
  }
}

export interface ReplayedTrace {
  trace: DecisionTrace;
  /** Null for a trace stored as its explanation (before replay records). */
  scoreTask: ScoreTask | null;
}
