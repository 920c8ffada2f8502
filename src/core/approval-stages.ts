/**
 * The staged review of an approval request (spec 3.5, docs/approvals.md), as pure moves over its
 * stages: who may decide the open stage, and what the request becomes.
 *
 * Stage statuses: `waiting` (an earlier stage is still open), `pending` (the one stage to decide
 * now), `approved`, `rejected`. A request is created with its first stage `pending` and the rest
 * `waiting`; approving moves the next one to `pending`; rejecting closes the request and leaves
 * later stages `waiting`, which says that nobody reviewed them. Expiry changes no stage.
 */

export type StageRole = "editor" | "admin";
export type StageStatus = "waiting" | "pending" | "approved" | "rejected";

export interface Stage {
  requiredRole: StageRole;
  status: StageStatus;
  decidedBy: string | null;
  decidedByName: string | null;
  decidedAt: string | null;
  comment: string;
}

export interface Decider {
  /** Stable identity of the person or machine deciding. */
  id: string;
  name: string;
  role: "viewer" | "editor" | "admin";
}

export type StageOutcome =
  | { ok: true; stages: Stage[]; status: "pending" | "approved" | "rejected" }
  | { ok: false; reason: "SELF_APPROVAL" | "DUPLICATE_APPROVER" | "STAGE_ROLE_REQUIRED"; message: string };

const RANK = { viewer: 0, editor: 1, admin: 2 } as const;

export function initialStages(roles: readonly StageRole[]): Stage[] {
  return roles.map((requiredRole, i) => ({
    requiredRole,
    status: i === 0 ? "pending" : "waiting",
    decidedBy: null,
    decidedByName: null,
    decidedAt: null,
    comment: "",
  }));
}

/**
 * Decides the open stage of a pending request. The requester may reject (withdraw) but never
 * approve; nobody approves two stages; the decider's role must reach the stage's.
 */
export function decideStage(
  stages: readonly Stage[],
  requesterId: string | null,
  decider: Decider,
  decision: "approve" | "reject",
  comment: string,
  at: Date,
): StageOutcome {
  const open = stages.findIndex((s) => s.status === "pending");
  const stage = stages[open];
  if (RANK[decider.role] < RANK[stage.requiredRole]) {
    return { ok: false, reason: "STAGE_ROLE_REQUIRED", message: `stage ${open + 1} needs an ${stage.requiredRole}` };
  }
  if (decision === "approve") {
    if (requesterId !== null && decider.id === requesterId) {
      return { ok: false, reason: "SELF_APPROVAL", message: "the requester cannot approve their own request" };
    }
    if (stages.some((s) => s.status === "approved" && s.decidedBy === decider.id)) {
      return { ok: false, reason: "DUPLICATE_APPROVER", message: "the same person cannot approve two stages" };
    }
  }
  const next = stages.map((s) => ({ ...s }));
  next[open] = { ...stage, status: decision === "approve" ? "approved" : "rejected", decidedBy: decider.id, decidedByName: decider.name, decidedAt: at.toISOString(), comment };
  if (decision === "reject") return { ok: true, stages: next, status: "rejected" };
  if (open + 1 < next.length) {
    next[open + 1].status = "pending";
    return { ok: true, stages: next, status: "pending" };
  }
  return { ok: true, stages: next, status: "approved" };
}
