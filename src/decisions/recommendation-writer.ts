import type { DecisionStore, RecommendationWrite } from "./decision-store.js";

interface Waiting extends RecommendationWrite {
  resolve(createdAt: Date): void;
  reject(err: unknown): void;
}

export interface RecommendationWriterOptions {
  /** Statements in flight at once; what arrives meanwhile waits and goes as one batch. */
  maxInFlight?: number;
  /** Decisions per statement. */
  maxBatch?: number;
}

/**
 * Group commit of Recommend's writes. A decision's recommendation and impression rows must be
 * committed before it is answered (an immediate Respond attributes to them), so they cannot be
 * written after the answer like traces. Instead, while `maxInFlight` statements are running,
 * decisions that arrive wait and then go together in one multi-row statement: one round trip,
 * one commit and one WAL flush for the batch instead of one per decision. An idle service writes
 * each decision at once, so group commit adds no wait when there is nothing to group.
 *
 * A batch is all or nothing; when it fails, its decisions are written one by one, so a row that
 * cannot be stored (its tenant deleted meanwhile) fails only its own decision.
 */
export class RecommendationWriter {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;

  constructor(
    private readonly store: Pick<DecisionStore, "saveRecommendation" | "saveRecommendations">,
    options: RecommendationWriterOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 2;
    this.maxBatch = options.maxBatch ?? 64;
  }

  /** Resolves with the recommendation's created_at once its rows are committed. */
  save(write: RecommendationWrite): Promise<Date> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...write, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.next();
      });
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    if (batch.length > 1) {
      try {
        const createdAt = await this.store.saveRecommendations(batch);
        batch.forEach((w, i) => w.resolve(createdAt[i]));
        return;
      } catch {
        // One by one below: each decision gets its own outcome.
      }
    }
    await Promise.all(
      batch.map((w) => this.store.saveRecommendation(w.tenantId, w.rec, w.impressions).then(w.resolve, w.reject)),
    );
  }
}
