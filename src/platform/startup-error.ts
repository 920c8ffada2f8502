/**
 * A start-up that cannot work for a reason the operator must fix (an unreachable PostgreSQL or
 * Redis, an embedded PostgreSQL that cannot run): printed as one `error:` line that says why, not
 * as a stack (README).
 */
export class StartupError extends Error {}
