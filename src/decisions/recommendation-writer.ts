import { GroupCommit, type GroupCommitOptions } from "../platform/group-commit.js";
import type { DecisionStore, RecommendationWrite } from "./decision-store.js";

/**
 * Group commit of Recommend's writes (src/platform/group-commit.ts). A decision's recommendation
 * and impression rows must be committed before it is answered (an immediate Respond attributes to
 * them), so they cannot be written after the answer like traces; decisions that arrive while
 * statements run go together in one multi-row statement instead.
 */
export class RecommendationWriter {
  private readonly commits: GroupCommit<RecommendationWrite, Date>;

  constructor(
    private readonly store: Pick<DecisionStore, "saveRecommendations" | "deleteRecommendation">,
    options: GroupCommitOptions = {},
  ) {
    this.commits = new GroupCommit(
      (batch) => store.saveRecommendations(batch),
      // The same statement for one write: a lone decision, or each of a failed batch's in turn.
      async (w) => (await store.saveRecommendations([w]))[0],
      options,
    );
  }

  /** Resolves with the recommendation's created_at once its rows are committed. */
  save(write: RecommendationWrite): Promise<Date> {
    return this.commits.submit(write);
  }

  /** Takes back a saved decision's rows (a decision that failed after they were committed). */
  unsave(tenantId: string, recommendationId: string): Promise<void> {
    return this.store.deleteRecommendation(tenantId, recommendationId);
  }
}
