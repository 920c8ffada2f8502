import { randomBytes } from "node:crypto";
import { ExperimentWriteSchema, type ExperimentWrite } from "../../gen/decisioning/v1/experiments_pb.js";
import { challengerVariant, CHAMPION_VARIANT, HOLDOUT_VARIANT, type ChallengerArm } from "../core/index.js";
import type { FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { writtenFieldNames } from "../catalog/write-fields.js";
import { EXPERIMENT_STATUSES, type ExperimentRow, type ExperimentStatus, type ExperimentValues } from "./experiment-store.js";

/** The writable fields of an experiment, as stored. */
export type ExperimentFields = Pick<
  ExperimentRow,
  | "key"
  | "name"
  | "flow_id"
  | "champion_model_id"
  | "champion_pct"
  | "challengers"
  | "holdout_percent"
  | "status"
  | "auto_promote"
  | "promote_threshold"
  | "promote_after_days"
>;

export const DEFAULTS = {
  holdout_percent: 0,
  status: "draft" as ExperimentStatus,
  auto_promote: false,
  promote_threshold: 0.05,
  promote_after_days: 7,
};

/** The states an experiment may move to from each state (docs/experiments.md); staying put is always allowed. */
export const LEGAL_MOVES: Record<ExperimentStatus, readonly ExperimentStatus[]> = {
  draft: ["active", "archived"],
  active: ["paused", "archived"],
  paused: ["active", "archived"],
  archived: [],
};

/** What a new experiment may start as. */
const INITIAL_STATUSES: readonly ExperimentStatus[] = ["draft", "active"];

const MAX_NAME = 200;
const MAX_KEY = 100;
const MAX_CHALLENGERS = 20;
const MAX_PROMOTE_THRESHOLD = 100;
const MAX_PROMOTE_AFTER_DAYS = 3650;
/** Shares are percentages; floating sums like 33.3 + 33.3 + 33.4 must still count as 100. */
const SUM_TOLERANCE = 1e-9;
const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** A key for an experiment created without one: it seeds the assignment hash, so it must be unique and stable. */
export function generatedKey(): string {
  return `exp-${randomBytes(6).toString("hex")}`;
}

const percent = (n: number) => Number.isFinite(n) && n >= 0 && n <= 100;

/**
 * The fields a write sets (REST: the body's keys), checked one by one; problems go to `violations`
 * with the field's JSON path. Cross-field rules run on the merged record (`recordViolations`).
 */
export function writtenValues(req: ExperimentWrite, violations: FieldViolation[]): Partial<ExperimentFields> {
  const written = writtenFieldNames(ExperimentWriteSchema, req);
  const values: Partial<ExperimentFields> = {};
  if (written.has("key")) {
    const key = (req.key ?? "").trim();
    if (!KEY_PATTERN.test(key) || key.length > MAX_KEY) {
      violations.push({ field: "key", message: `must be 1-${MAX_KEY} letters, digits and . _ : - (starting with a letter or digit)` });
    }
    values.key = key;
  }
  if (written.has("name")) {
    const name = (req.name ?? "").trim();
    if (!name) violations.push({ field: "name", message: "must not be empty" });
    else if (name.length > MAX_NAME) violations.push({ field: "name", message: `must be at most ${MAX_NAME} characters` });
    values.name = name;
  }
  if (written.has("flow_id")) {
    const flowId = req.flowId ?? "";
    if (flowId && !isUuid(flowId)) violations.push({ field: "flowId", message: `unknown decision flow ${flowId}` });
    values.flow_id = flowId || null;
  }
  if (written.has("champion_model_id")) {
    const id = req.championModelId ?? "";
    if (!id) violations.push({ field: "championModelId", message: "is required" });
    else if (!isUuid(id)) violations.push({ field: "championModelId", message: `unknown model ${id}` });
    values.champion_model_id = id;
  }
  if (written.has("traffic_split")) {
    const pct = req.trafficSplit?.championPct;
    if (pct === undefined) violations.push({ field: "trafficSplit.championPct", message: "is required" });
    else if (!percent(pct)) violations.push({ field: "trafficSplit.championPct", message: "must be between 0 and 100" });
    values.champion_pct = pct;
  }
  if (written.has("challengers")) {
    if (req.challengers.length > MAX_CHALLENGERS) violations.push({ field: "challengers", message: `must list at most ${MAX_CHALLENGERS} challengers` });
    values.challengers = req.challengers.map((c, i): ChallengerArm => {
      const at = `challengers[${i}]`;
      if (!c.modelId) violations.push({ field: `${at}.modelId`, message: "is required" });
      else if (!isUuid(c.modelId)) violations.push({ field: `${at}.modelId`, message: `unknown model ${c.modelId}` });
      if (c.trafficPct === undefined) violations.push({ field: `${at}.trafficPct`, message: "is required" });
      else if (!percent(c.trafficPct)) violations.push({ field: `${at}.trafficPct`, message: "must be between 0 and 100" });
      const key = c.key?.trim() || null;
      if (key !== null && (!KEY_PATTERN.test(key) || key.length > MAX_KEY)) {
        violations.push({ field: `${at}.key`, message: `must be 1-${MAX_KEY} letters, digits and . _ : - (starting with a letter or digit)` });
      }
      return { modelId: c.modelId, key, trafficPct: c.trafficPct ?? 0 };
    });
  }
  if (written.has("holdout_percent")) {
    const h = req.holdoutPercent ?? 0;
    if (!(Number.isFinite(h) && h >= 0 && h < 100)) violations.push({ field: "holdoutPercent", message: "must be at least 0 and below 100" });
    values.holdout_percent = h;
  }
  if (written.has("status")) {
    const status = req.status ?? "";
    if (!(EXPERIMENT_STATUSES as readonly string[]).includes(status)) {
      violations.push({ field: "status", message: `must be one of ${EXPERIMENT_STATUSES.join(", ")}` });
    }
    values.status = status as ExperimentStatus;
  }
  if (written.has("auto_promote")) values.auto_promote = req.autoPromote ?? false;
  if (written.has("promote_threshold")) {
    const t = req.promoteThreshold ?? DEFAULTS.promote_threshold;
    if (!(Number.isFinite(t) && t >= 0 && t <= MAX_PROMOTE_THRESHOLD)) {
      violations.push({ field: "promoteThreshold", message: `must be a relative uplift between 0 and ${MAX_PROMOTE_THRESHOLD} (0.05 = 5%)` });
    }
    values.promote_threshold = t;
  }
  if (written.has("promote_after_days")) {
    const d = req.promoteAfterDays ?? DEFAULTS.promote_after_days;
    if (!(Number.isInteger(d) && d >= 0 && d <= MAX_PROMOTE_AFTER_DAYS)) {
      violations.push({ field: "promoteAfterDays", message: `must be a whole number of days between 0 and ${MAX_PROMOTE_AFTER_DAYS}` });
    }
    values.promote_after_days = d;
  }
  return values;
}

/** Rules across fields, on the experiment as it would be after the write. */
export function recordViolations(after: Partial<ExperimentFields>, creating: boolean): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (creating) {
    if (after.champion_model_id === undefined) violations.push({ field: "championModelId", message: "is required" });
    if (after.champion_pct === undefined) violations.push({ field: "trafficSplit.championPct", message: "is required" });
    if (after.status !== undefined && !INITIAL_STATUSES.includes(after.status)) {
      violations.push({ field: "status", message: `a new experiment starts as ${INITIAL_STATUSES.join(" or ")}` });
    }
  }
  if (violations.length) return violations;
  const challengers = after.challengers ?? [];
  const total = (after.champion_pct ?? 0) + challengers.reduce((sum, c) => sum + c.trafficPct, 0);
  if (Math.abs(total - 100) > SUM_TOLERANCE) {
    violations.push({ field: "trafficSplit.championPct", message: `championPct plus the challengers' trafficPct must equal 100, not ${total}` });
  }
  const models = new Set([after.champion_model_id]);
  const variants = new Set([HOLDOUT_VARIANT, CHAMPION_VARIANT]);
  challengers.forEach((c, i) => {
    if (models.has(c.modelId)) violations.push({ field: `challengers[${i}].modelId`, message: "is already the champion or another challenger" });
    models.add(c.modelId);
    const variant = challengerVariant(c);
    if (variants.has(variant)) violations.push({ field: `challengers[${i}].key`, message: `variant name ${variant} is already taken` });
    variants.add(variant);
  });
  return violations;
}

/** 400 naming `status` unless `from` → `to` is a legal move. */
export function transitionViolation(from: ExperimentStatus, to: ExperimentStatus): FieldViolation | null {
  if (from === to || LEGAL_MOVES[from].includes(to)) return null;
  const legal = LEGAL_MOVES[from];
  return {
    field: "status",
    message: `cannot move from ${from} to ${to}; ${legal.length ? `from ${from} an experiment may move to ${legal.join(" or ")}` : `${from} is final`}`,
  };
}

/** The stored values of a merged record, with what the first activation adds. */
export function withActivation(values: ExperimentValues, before: ExperimentRow | null, now: Date): ExperimentValues {
  const activating = values.status === "active" && (before === null || before.started_at === null);
  return activating ? { ...values, started_at: now } : values;
}
