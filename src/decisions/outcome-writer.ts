import { GroupCommit, type GroupCommitOptions } from "../platform/group-commit.js";
import type { OutcomeRow, OutcomeStore, OutcomeWrite } from "./outcome-store.js";

/**
 * Group commit of Respond's writes (src/platform/group-commit.ts): an outcome is answered only
 * once its row is committed (its idempotency key is then taken for every process), so outcomes
 * that arrive while statements run go together in one multi-row statement.
 */
export class OutcomeWriter {
  private readonly commits: GroupCommit<OutcomeWrite, OutcomeRow | null>;

  constructor(store: Pick<OutcomeStore, "insert" | "insertMany">, options: GroupCommitOptions = {}) {
    this.commits = new GroupCommit(
      (batch) => store.insertMany(batch),
      ({ tenantId, row }) => store.insert(tenantId, row),
      options,
    );
  }

  /** The stored row, or null when the key was already taken (even by a concurrent call). */
  insert(tenantId: string, row: Omit<OutcomeRow, "created_at">): Promise<OutcomeRow | null> {
    return this.commits.submit({ tenantId, row });
  }
}
