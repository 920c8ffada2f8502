/**
 * The review workflow of a content item (spec 3.2; docs/content.md), as data: which state each
 * move needs and where it leads. Update, revert and archive are allowed from any state and are
 * not in this table: update keeps the state, revert always leads to draft, archive to archived.
 * Each move needs exactly its one state (spec 3.2: submit "must be `draft`"), so an approved or
 * published item that was edited reaches review again only through a revert to draft.
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

/** Why `move` is refused from `status`, or null when it is allowed. */
export function contentMoveRefusal(move: ContentMove, status: ContentStatus): string | null {
  const { from } = CONTENT_MOVES[move];
  if (status === from) return null;
  return `cannot ${move} a ${status} content item; it must be ${from}`;
}
