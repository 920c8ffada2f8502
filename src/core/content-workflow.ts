/**
 * The review workflow of a content item (spec 3.2; docs/content.md), as data: which state each
 * move needs and where it leads. Update, revert and archive are allowed from any state and are
 * not in this table: update keeps the state, revert always leads to draft, archive to archived.
 * One addition where the spec is silent: an approved or published item that was edited after its
 * review (update keeps its state) may be submitted again, so edits get reviewed without a revert.
 */
export const CONTENT_STATES = ["draft", "in_review", "approved", "published", "archived"] as const;
export type ContentStatus = (typeof CONTENT_STATES)[number];

export type ContentMove = "submit" | "approve" | "reject" | "publish";

export const CONTENT_MOVES: Readonly<Record<ContentMove, { from: ContentStatus; to: ContentStatus }>> = {
  submit: { from: "draft", to: "in_review" },
  approve: { from: "in_review", to: "approved" },
  reject: { from: "in_review", to: "draft" },
  publish: { from: "approved", to: "published" },
};

export function isContentStatus(value: string): value is ContentStatus {
  return (CONTENT_STATES as readonly string[]).includes(value);
}

/** States an edited item may be submitted from again (its reviewed version keeps serving meanwhile). */
export const RESUBMITTABLE_STATES: readonly ContentStatus[] = ["approved", "published"];

/**
 * Why `move` is refused from `status`, or null when it is allowed. `edited`: the item holds a
 * version newer than the one its approval or publish reviewed.
 */
export function contentMoveRefusal(move: ContentMove, status: ContentStatus, edited = false): string | null {
  const { from } = CONTENT_MOVES[move];
  if (status === from) return null;
  if (move === "submit" && RESUBMITTABLE_STATES.includes(status)) {
    if (edited) return null;
    return `cannot submit a ${status} content item without changes since its review; it must be ${from}, or ${status} with a newer version than the one reviewed`;
  }
  return `cannot ${move} a ${status} content item; it must be ${from}`;
}

/** Whether the item holds a version newer than the one its current state reviewed. */
export function editedSinceReview(item: { status: ContentStatus; version: number; approvedVersion: number | null; publishedVersion: number | null }): boolean {
  const reviewed = item.status === "approved" ? item.approvedVersion : item.status === "published" ? item.publishedVersion : null;
  return reviewed !== null && item.version > reviewed;
}
