import { gunzipSync } from "node:zlib";
import type { Sequelize } from "sequelize";
import { execReturning, preparedRows, selectRows, type Transaction } from "../platform/db.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { TraceRecord } from "./trace-record.js";

export interface RecommendationRow {
  id: string;
  customer_id: string;
  flow_id: string | null;
  interaction_id: string | null;
  channel_id: string | null;
  multi_placement: boolean;
  offers: unknown[];
  context: Record<string, unknown>;
  /** Ids of the models that scored the decision, serving model first (scoredModelIds). */
  scored_by: string[];
  /** The experiment that covered the decision, and the customer's variant in it. */
  experiment_id: string | null;
  experiment_variant: string | null;
  /** The decision's funnel figures (decision-metrics.ts); NULL on rows stored before migration 0010. */
  qualified_count: number | null;
  suppressed_count: number | null;
  degraded_scoring: boolean | null;
  created_at: Date;
}

export interface ImpressionRow {
  id: string;
  rank: number;
  offer_id: string;
  creative_id: string | null;
  channel_id: string | null;
  placement_id: string | null;
  context_bucket: string;
}

export interface TraceRow {
  tenant_id: string;
  id: string;
  recommendation_id: string;
  customer_id: string;
  flow_id: string | null;
  degraded_scoring: boolean;
  selected_count: number;
  rejected_count: number;
  /** The replay record (trace-record.ts). */
  trace: TraceRecord;
  inputs_hash: string;
  policy_version_hash: string;
  created_at: Date;
}

/** One decision's rows as Recommend stores them. */
export interface RecommendationWrite {
  tenantId: string;
  rec: Omit<RecommendationRow, "created_at">;
  impressions: ImpressionRow[];
}

/** A trace row whose trace is already its JSON's bytes, as the trace writer queues it. */
export type SerializedTrace = Omit<TraceRow, "trace"> & { trace: Buffer };

export interface SettingsRow {
  decision_trace_enabled: boolean;
  decision_trace_sample_rate: number;
  maturity_ramp_days: number;
  maturity_ramp_start_fraction: number;
  /** aiAnalyzerSettings.llmExplanationsEnabled: the opt-in to decision explanations (spec 4.11). */
  llm_explanations_enabled: boolean;
  /** Publishing a decision flow needs an approved publish approval (spec 3.5, docs/approvals.md). */
  require_publish_approval: boolean;
  updated_at: Date | null;
}

export const DEFAULT_SETTINGS: SettingsRow = {
  decision_trace_enabled: true,
  decision_trace_sample_rate: 1,
  maturity_ramp_days: 0,
  maturity_ramp_start_fraction: 0.1,
  llm_explanations_enabled: false,
  require_publish_approval: false,
  updated_at: null,
};

export interface CustomerRow {
  customer_id: string;
  attributes: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/** Tables the workspace reset empties, children first; identity and the audit log stay. */
const WORKSPACE_TABLES = [
  "journey_enrollments", "trigger_rules", "journeys", "customer_events",
  "approval_requests", "ai_recommendations",
  "delivery_events", "notification_delivery_attempts", "notification_deliveries", "outbound_messages", "notification_providers",
  "clv_records", "customer_identities", "decision_traces", "decision_policies", "interactions", "recommendations", "customers", "experiments", "decision_flow_versions", "decision_flows",
  "budgets", "algorithm_models", "creatives", "content_versions", "content_items", "offers", "catalog_entries", "tenant_settings",
];

/** Recommendations, impressions, traces, customers and tenant settings. Tenant first, always. */
export class DecisionStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Decisions' recommendations and their impression rows in one statement (data-modifying CTEs run
   * to completion together, so an immediate Respond finds a decision's rows all or none), in one
   * round trip: one decision, or a group commit's batch (recommendation-writer.ts). The batch is one
   * JSON parameter that PostgreSQL takes apart (json_to_recordset), so one prepared statement serves
   * every batch size and pg quotes no array literals in JavaScript; one commit (one WAL flush) serves
   * the whole batch. Answers each recommendation's created_at, in the order given.
   */
  async saveRecommendations(batch: RecommendationWrite[]): Promise<Date[]> {
    const rows = await preparedRows<{ id: string; created_at: Date }>(
      this.db,
      "save-recommendations-json",
      `WITH w AS (
         SELECT w."tenantId" AS tenant_id, r.*, w.impressions
         FROM json_to_recordset($1::json) AS w("tenantId" uuid, rec json, impressions json),
           json_to_record(w.rec) AS r(id uuid, customer_id text, flow_id uuid, interaction_id uuid, channel_id uuid, multi_placement boolean,
             offers jsonb, context jsonb, scored_by text[], experiment_id uuid, experiment_variant text, qualified_count int,
             suppressed_count int, degraded_scoring boolean)),
       rec AS (
         INSERT INTO recommendations (tenant_id, id, customer_id, flow_id, interaction_id, channel_id, multi_placement, offers, context, scored_by,
           experiment_id, experiment_variant, qualified_count, suppressed_count, degraded_scoring)
         SELECT tenant_id, id, customer_id, flow_id, interaction_id, channel_id, multi_placement, offers, context, scored_by,
           experiment_id, experiment_variant, qualified_count, suppressed_count, degraded_scoring
         FROM w RETURNING tenant_id, id, customer_id, interaction_id, created_at),
       imp AS (
         INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, interaction_id, rank, offer_id, creative_id,
           channel_id, placement_id, outcome, direction, context_bucket, created_at)
         SELECT rec.tenant_id, i.id, rec.customer_id, rec.id, rec.interaction_id, i.rank, i.offer_id, i.creative_id, i.channel_id,
           i.placement_id, 'impression', 'outbound', i.context_bucket, rec.created_at
         FROM w JOIN rec ON rec.tenant_id = w.tenant_id AND rec.id = w.id,
           json_to_recordset(w.impressions) AS i(id uuid, rank int, offer_id uuid, creative_id uuid, channel_id uuid, placement_id uuid, context_bucket text))
       SELECT id, created_at FROM rec`,
      [JSON.stringify(batch)],
    );
    const createdAt = new Map(rows.map((r) => [r.id, r.created_at]));
    return batch.map((w) => createdAt.get(w.rec.id)!);
  }

  /**
   * Takes back a stored decision nobody received (its count failed after its rows were written):
   * the recommendation and its impressions, in one statement.
   */
  async deleteRecommendation(tenantId: string, id: string): Promise<void> {
    await this.db.query(
      `WITH imp AS (DELETE FROM interactions WHERE tenant_id = $1 AND recommendation_id = $2 AND outcome = 'impression')
       DELETE FROM recommendations WHERE tenant_id = $1 AND id = $2`,
      { bind: [tenantId, id] },
    );
  }

  /**
   * One statement per batch, prepared once per connection and batch size (the writer's batches
   * have a bounded size), so PostgreSQL plans it once and sequelize formats no parameters.
   */
  async insertTraces(rows: SerializedTrace[]): Promise<void> {
    if (!rows.length) return;
    const bind: unknown[] = [];
    const tuples = rows.map((r) => {
      const values = [r.tenant_id, r.id, r.recommendation_id, r.customer_id, r.flow_id, r.degraded_scoring, r.selected_count,
        r.rejected_count, r.trace, r.inputs_hash, r.policy_version_hash, r.created_at];
      const start = bind.length;
      bind.push(...values);
      return `(${values.map((_, i) => `$${start + i + 1}`).join(", ")})`;
    });
    await preparedRows(
      this.db,
      `insert-traces-${rows.length}`,
      `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, flow_id, degraded_scoring, selected_count,
         rejected_count, trace, inputs_hash, policy_version_hash, created_at) VALUES ${tuples.join(", ")}
       ON CONFLICT DO NOTHING`,
      bind,
    );
  }

  /** Stores a configuration version (gzipped JSON); a version stored by another process stays. */
  async insertPolicy(tenantId: string, hash: string, config: Buffer): Promise<void> {
    await this.db.query(
      "INSERT INTO decision_policies (tenant_id, policy_version_hash, config) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
      { bind: [tenantId, hash, config] },
    );
  }

  /** The configuration a version names, parsed; null when it was never stored. */
  async policy(tenantId: string, hash: string): Promise<unknown | null> {
    const [row] = await selectRows<{ config: Buffer }>(
      this.db,
      "SELECT config FROM decision_policies WHERE tenant_id = $1 AND policy_version_hash = $2",
      [tenantId, hash],
    );
    return row ? JSON.parse(gunzipSync(row.config).toString("utf8")) : null;
  }

  /** Newest first; `since` and `until` bound the trace's `created_at`, both inclusive. */
  async traces(tenantId: string, filter: { customerId?: string; recommendationId?: string; since?: Date; until?: Date }, limit: number, offset: number) {
    const bind: unknown[] = [tenantId];
    let where = "tenant_id = $1";
    if (filter.customerId) {
      bind.push(filter.customerId);
      where += ` AND customer_id = $${bind.length}`;
    }
    if (filter.recommendationId) {
      bind.push(filter.recommendationId);
      where += ` AND recommendation_id = $${bind.length}`;
    }
    if (filter.since) {
      bind.push(filter.since);
      where += ` AND created_at >= $${bind.length}`;
    }
    if (filter.until) {
      bind.push(filter.until);
      where += ` AND created_at <= $${bind.length}`;
    }
    const [rows, [count]] = await Promise.all([
      selectRows<Omit<TraceRow, "trace">>(
        this.db,
        `SELECT tenant_id, id, recommendation_id, customer_id, flow_id, degraded_scoring, selected_count, rejected_count,
           inputs_hash, policy_version_hash, created_at
         FROM decision_traces WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $${bind.length + 1} OFFSET $${bind.length + 2}`,
        [...bind, limit, offset],
      ),
      selectRows<{ n: number }>(this.db, `SELECT count(*)::int AS n FROM decision_traces WHERE ${where}`, bind),
    ]);
    return { rows, total: count.n };
  }

  /** By trace id or by the recommendation it explains. */
  async trace(tenantId: string, id: string): Promise<TraceRow | null> {
    const [row] = await selectRows<SerializedTrace>(
      this.db,
      "SELECT * FROM decision_traces WHERE tenant_id = $1 AND (id = $2 OR recommendation_id = $2) LIMIT 1",
      [tenantId, id],
    );
    return row ? { ...row, trace: JSON.parse(traceJson(row.trace)) as TraceRecord } : null;
  }

  async settings(tenantId: string, t?: Transaction): Promise<SettingsRow> {
    const [row] = await selectRows<SettingsRow>(this.db, "SELECT * FROM tenant_settings WHERE tenant_id = $1", [tenantId], t);
    return row ?? DEFAULT_SETTINGS;
  }

  /** Writes the settings as given: the caller merges them with what it read in the same transaction. */
  async saveSettings(t: Transaction, tenantId: string, merged: SettingsRow): Promise<SettingsRow> {
    const [row] = await execReturning<SettingsRow>(
      this.db,
      `INSERT INTO tenant_settings (tenant_id, decision_trace_enabled, decision_trace_sample_rate, maturity_ramp_days, maturity_ramp_start_fraction,
         llm_explanations_enabled, require_publish_approval)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (tenant_id) DO UPDATE SET decision_trace_enabled = $2, decision_trace_sample_rate = $3,
         maturity_ramp_days = $4, maturity_ramp_start_fraction = $5, llm_explanations_enabled = $6, require_publish_approval = $7,
         updated_at = now()
       RETURNING *`,
      [tenantId, merged.decision_trace_enabled, merged.decision_trace_sample_rate, merged.maturity_ramp_days, merged.maturity_ramp_start_fraction,
        merged.llm_explanations_enabled, merged.require_publish_approval],
      t,
    );
    return row;
  }

  async customer(tenantId: string, customerId: string): Promise<CustomerRow | null> {
    const [row] = await selectRows<CustomerRow>(this.db, "SELECT * FROM customers WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row ?? null;
  }

  async putCustomer(tenantId: string, customerId: string, attributes: Record<string, unknown>): Promise<CustomerRow> {
    const [row] = await execReturning<CustomerRow>(
      this.db,
      `INSERT INTO customers (tenant_id, customer_id, attributes) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id, customer_id) DO UPDATE SET attributes = $3, updated_at = now() RETURNING *`,
      [tenantId, customerId, JSON.stringify(attributes)],
    );
    return row;
  }

  /**
   * Deletes the workspace's data (spec 1: reset) and lets `reseed` restore the defaults a new
   * tenant starts with, in one transaction.
   */
  async resetWorkspace(tenantId: string, reseed: (t: Transaction) => Promise<void>): Promise<void> {
    // The tenant's write lock before any row is touched: the one lock order of every catalog write.
    await tenantWriteTransaction(this.db, tenantId, async (t) => {
      for (const table of WORKSPACE_TABLES) await this.db.query(`DELETE FROM ${table} WHERE tenant_id = $1`, { bind: [tenantId], transaction: t });
      await reseed(t);
    });
  }
}

/** A stored trace's JSON: its bytes as written since migration 0028, or gzip of them before. */
function traceJson(stored: Buffer): string {
  const gzipped = stored[0] === 0x1f && stored[1] === 0x8b;
  return (gzipped ? gunzipSync(stored) : stored).toString("utf8");
}
