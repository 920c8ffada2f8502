import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import { ErasureReportSchema, type EraseCustomerRequest, type ErasureReport } from "../../gen/decisioning/v1/portability_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CUSTOMER_CHANNEL } from "../decisions/customer-cache.js";
import { ERASED_CUSTOMER_CHANNEL } from "../decisions/outcome-replay.js";
import type { VariantAssignments } from "../experiments/variant-assignments.js";
import type { EvidenceCount, EvidenceStore } from "../decisions/evidence-store.js";
import type { CustomerCounterWipe } from "../decisions/tenant-counter-wipe.js";
import { adaptiveCountKey } from "../core/index.js";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import { retryingTransaction, selectRows, type Transaction } from "../platform/db.js";
import { invalidField, unavailable } from "../platform/errors.js";

export interface ErasureDeps {
  db: Sequelize;
  audit: AuditLog;
  bus: Bus;
  assignments: Pick<VariantAssignments, "forget" | "count">;
  evidence: Pick<EvidenceStore, "countedExposures" | "takeBack">;
  /** Frequency-cap counters and kept negative outcomes. */
  counters: CustomerCounterWipe;
  /** Outcome keys in the `positive` category: the outcomes that counted as successes. */
  positiveOutcomes(tenantId: string): Promise<string[]>;
  /** Other domains' customer rows outside CUSTOMER_TABLES (ingestion's loaded customer tables, the outbox's messages). */
  otherCustomerData?: readonly CustomerDataHolder[];
  /** The customer's entries in the tenant's event stream (Redis, spec 6): the events domain's. */
  streamEntries: CustomerStreamEntries;
}

/**
 * A customer's entries in a Redis stream. Not in the erasure's transaction (Redis has none to
 * join): deleted after its commit, like the variant assignments, and counted back by its verification.
 */
export interface CustomerStreamEntries {
  /** Deletes the customer's entries: how many. */
  forgetCustomer(tenantId: string, customerId: string): Promise<number>;
  /** How many of the customer's entries are left. */
  countCustomer(tenantId: string, customerId: string): Promise<number>;
}

/**
 * A domain's rows of one customer that no table of CUSTOMER_TABLES holds (tables whose names or
 * key columns are the tenant's own). Erased in the erasure's transaction and counted back by its
 * verification, like the listed tables.
 */
export interface CustomerDataHolder {
  /** Its key in the erasure report's `removed`. */
  kind: string;
  /** Deletes the customer's rows (in the erasure's transaction when one is given): how many. */
  erase(tenantId: string, customerId: string, t?: Transaction): Promise<number>;
  /** How many of the customer's rows are left. */
  count(tenantId: string, customerId: string): Promise<number>;
}

/** What the customer's decisions and outcomes added to the adaptive evidence. */
interface Contribution {
  counts: EvidenceCount[];
  /** Exposures whose success was counted: their markers go too. */
  exposureIds: string[];
}

/**
 * The tables that hold a customer's data, children first (narratives cascade from their traces).
 * A later domain that stores customer data (events, CLV, profiles) adds its table here. An
 * enrollment keeps its step results inside its row (`steps`): no child table.
 */
const CUSTOMER_TABLES = [
  { kind: "journeyEnrollments", table: "journey_enrollments" },
  { kind: "customerEvents", table: "customer_events" },
  { kind: "deliveryEvents", table: "delivery_events" },
  { kind: "clvRecords", table: "clv_records" },
  { kind: "identityLinks", table: "customer_identities" },
  { kind: "decisionTraces", table: "decision_traces" },
  { kind: "interactions", table: "interactions" },
  { kind: "recommendations", table: "recommendations" },
  { kind: "customers", table: "customers" },
] as const;

/**
 * GDPR erasure of one customer (spec 4.13, docs/portability.md "Erasure"): every row naming them,
 * their kept experiment variants, and every process's cached copy of their attributes; then a
 * check that nothing is left, before the answer. The audit entry names a hash of the id, never
 * the id: the hash chain makes audit entries unerasable.
 */
export class CustomerErasure {
  constructor(private readonly deps: ErasureDeps) {}

  async erase(ctx: TenantContext, req: EraseCustomerRequest): Promise<ErasureReport> {
    const customerId = req.customerId;
    if (!customerId.trim()) throw invalidField("customerId", "is required");
    const removed: Record<string, number> = {};
    const experimentIds = await this.experimentIds(ctx.tenantId);
    const positive = await this.deps.positiveOutcomes(ctx.tenantId);
    let taken: EvidenceCount[] = [];
    await retryingTransaction(this.deps.db, async (t) => {
      const contribution = await this.contribution(t, ctx.tenantId, customerId, positive);
      for (const kind of Object.keys(removed)) delete removed[kind]; // a retried transaction counts afresh
      await this.deleteRows(ctx.tenantId, customerId, removed, t);
      await this.deps.audit.record(t, ctx, {
        action: "gdpr_erasure",
        entityType: "customer",
        entityId: subjectHash(ctx.tenantId, customerId),
        entityName: null,
        before: null,
        after: null,
        entityVersion: null,
        changes: { removed: { ...removed } },
      });
      // Last before the commit: a failure here rolls the deletion back, so a retry finds the
      // rows again; a commit failing after it takes back twice on retry, bounded at zero.
      taken = await this.deps.evidence.takeBack(ctx.tenantId, contribution.counts, contribution.exposureIds);
    });
    removed.variantAssignments = await this.deps.assignments.forget(ctx.tenantId, customerId, experimentIds);
    removed.counters = await this.deps.counters.forgetCustomer(ctx.tenantId, customerId);
    removed.eventStreamEntries = await this.deps.streamEntries.forgetCustomer(ctx.tenantId, customerId);
    // Confirmed: the answer waits until every process has dropped its cached attributes and the
    // outcome records it kept to answer replays.
    const subject = `${ctx.tenantId}|${customerId}`;
    const dropped = await Promise.all([CUSTOMER_CHANNEL, ERASED_CUSTOMER_CHANNEL].map((channel) => this.deps.bus.publish(channel, subject, { confirmed: true })));
    await this.verify(ctx.tenantId, customerId, experimentIds, removed);
    // Again once the late rows are gone: a Respond recorded meanwhile was kept for its replays
    // before verify deleted its row.
    dropped.push(await this.deps.bus.publish(ERASED_CUSTOMER_CHANNEL, subject, { confirmed: true }));
    // A process that did not confirm may still hold the customer's data in memory: not verified.
    if (!dropped.every(Boolean)) {
      throw unavailable("ERASURE_INCOMPLETE", "erasure could not be verified: a service process did not confirm that it dropped the customer's cached data; retry the request");
    }
    return create(ErasureReportSchema, {
      removed,
      verified: true,
      evidenceTrialsRemoved: taken.reduce((n, c) => n + c.trials, 0),
      evidenceSuccessesRemoved: taken.reduce((n, c) => n + c.successes, 0),
    });
  }

  /**
   * The customer's share of the adaptive evidence (docs/portability.md, "Erasure and learning"):
   * one trial per offer each of their recommendations returned, under the bucket the
   * recommendation recorded, and one success per exposure whose success was counted: its marker
   * is still kept (30 days), or a positive outcome was recorded against it.
   */
  private async contribution(t: Transaction, tenantId: string, customerId: string, positive: string[]): Promise<Contribution> {
    const recs = await selectRows<{ id: string; offers: Array<{ rank: number | null; offerId: string; bucket?: string }> }>(
      this.deps.db,
      "SELECT id, offers FROM recommendations WHERE tenant_id = $1 AND customer_id = $2 FOR UPDATE",
      [tenantId, customerId],
      t,
    );
    const impressions = await selectRows<{ id: string; offer_id: string; context_bucket: string }>(
      this.deps.db,
      "SELECT id, offer_id, context_bucket FROM interactions WHERE tenant_id = $1 AND customer_id = $2 AND recommendation_id IS NULL",
      [tenantId, customerId],
      t,
    );
    const succeeded = await selectRows<{ recommendation_id: string; rank: number | null; offer_id: string }>(
      this.deps.db,
      `SELECT DISTINCT recommendation_id, rank, offer_id FROM interactions
       WHERE tenant_id = $1 AND customer_id = $2 AND recommendation_id IS NOT NULL AND status = 'recorded' AND outcome = ANY($3::text[])`,
      [tenantId, customerId, positive],
      t,
    );
    const byKey = new Map<string, EvidenceCount>();
    const add = (key: string, trials: number, successes: number) => {
      const c = byKey.get(key) ?? { key, trials: 0, successes: 0 };
      byKey.set(key, { key, trials: c.trials + trials, successes: c.successes + successes });
    };
    const exposures: Array<{ id: string; key: string; trial: boolean }> = [];
    for (const rec of recs) {
      for (const o of rec.offers) {
        if (o.bucket === undefined) continue; // stored before buckets were recorded: its key is unknown
        exposures.push({ id: `rec:${rec.id}:${o.rank ?? o.offerId}`, key: adaptiveCountKey(o.offerId, o.bucket), trial: true });
      }
    }
    for (const i of impressions) exposures.push({ id: `imp:${i.id}`, key: adaptiveCountKey(i.offer_id, i.context_bucket), trial: false });
    const counted = await this.deps.evidence.countedExposures(tenantId, exposures.map((e) => e.id));
    for (const s of succeeded) counted.add(`rec:${s.recommendation_id}:${s.rank ?? s.offer_id}`);
    for (const e of exposures) add(e.key, e.trial ? 1 : 0, counted.has(e.id) ? 1 : 0);
    return { counts: [...byKey.values()], exposureIds: exposures.filter((e) => counted.has(e.id)).map((e) => e.id) };
  }

  /** The kinds that still hold something of the customer. */
  private async remaining(tenantId: string, customerId: string, experimentIds: string[]): Promise<string[]> {
    const left: string[] = [];
    for (const { kind, table } of CUSTOMER_TABLES) {
      const [row] = await selectRows<{ n: number }>(this.deps.db, `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, [tenantId, customerId]);
      if (row.n > 0) left.push(kind);
    }
    for (const holder of this.deps.otherCustomerData ?? []) {
      if ((await holder.count(tenantId, customerId)) > 0) left.push(holder.kind);
    }
    if ((await this.deps.assignments.count(tenantId, customerId, experimentIds)) > 0) left.push("variantAssignments");
    if ((await this.deps.streamEntries.countCustomer(tenantId, customerId)) > 0) left.push("eventStreamEntries");
    return left;
  }

  /** Every experiment the tenant ever had, deleted ones too: their assignments live 30 days. */
  private async experimentIds(tenantId: string): Promise<string[]> {
    return (await selectRows<{ id: string }>(this.deps.db, "SELECT id FROM experiments WHERE tenant_id = $1", [tenantId])).map((r) => r.id);
  }

  /** Deletes the customer's rows, adding the counts to `removed`. */
  private async deleteRows(tenantId: string, customerId: string, removed: Record<string, number>, t?: Transaction): Promise<void> {
    for (const { kind, table } of CUSTOMER_TABLES) {
      const [, result] = await this.deps.db.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, { bind: [tenantId, customerId], transaction: t });
      removed[kind] = (removed[kind] ?? 0) + ((result as { rowCount?: number }).rowCount ?? 0);
    }
    for (const holder of this.deps.otherCustomerData ?? []) {
      removed[holder.kind] = (removed[holder.kind] ?? 0) + (await holder.erase(tenantId, customerId, t));
    }
  }

  /**
   * Reads everything back. Traces are written after the answer, in batches every 50 ms on each
   * process, so a decision made just before the erasure may store its trace after the delete: such
   * late rows are deleted again, for a few rounds. A survivor after that is a 503 asking for a retry,
   * never a false success.
   */
  private async verify(tenantId: string, customerId: string, experimentIds: string[], removed: Record<string, number>): Promise<void> {
    let left = await this.remaining(tenantId, customerId, experimentIds);
    for (let round = 0; left.length && round < VERIFY_ROUNDS; round++) {
      await sleep(LATE_WRITE_WAIT_MS * 2 ** round);
      await this.deleteRows(tenantId, customerId, removed);
      removed.variantAssignments += await this.deps.assignments.forget(tenantId, customerId, experimentIds);
      removed.eventStreamEntries += await this.deps.streamEntries.forgetCustomer(tenantId, customerId);
      left = await this.remaining(tenantId, customerId, experimentIds);
    }
    if (left.length) {
      throw unavailable("ERASURE_INCOMPLETE", `erasure could not be verified: data remains in ${left.join(", ")} (a decision for the customer ran meanwhile?); retry the request`);
    }
  }
}

/** Rounds of deleting late writes before the erasure gives up, and the first wait (doubling). */
const VERIFY_ROUNDS = 3;
const LATE_WRITE_WAIT_MS = 100;

/** Names the erased customer in the audit entry without naming them: a tenant-scoped SHA-256. */
export function subjectHash(tenantId: string, customerId: string): string {
  return createHash("sha256").update(`${tenantId}\n${customerId}`).digest("hex");
}
