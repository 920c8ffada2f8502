import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Sequelize } from "sequelize";
import { createSequelize } from "../../src/platform/db.js";
import { DecisionStore, type RecommendationWrite } from "../../src/decisions/decision-store.js";
import { RecommendationWriter } from "../../src/decisions/recommendation-writer.js";
import { createTestDatabase } from "../support/database.js";

/**
 * Group commit of Recommend's rows on real PostgreSQL: decisions that arrive while a statement is
 * running go together in one, every decision is answered only once its rows are committed, and a
 * row that cannot be stored fails only its own decision.
 */
let db: Sequelize;
let store: DecisionStore;
const tenants = [randomUUID(), randomUUID()];

before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 4 });
  store = new DecisionStore(db);
  for (const id of tenants) await db.query("INSERT INTO tenants (id, name) VALUES ($1, 'writer test')", { bind: [id] });
});
after(() => db.close());

function write(tenantId: string, impressions = 3, over: Partial<RecommendationWrite["rec"]> = {}): RecommendationWrite {
  const id = randomUUID();
  return {
    tenantId,
    rec: {
      id,
      customer_id: `c-${id.slice(0, 8)}`,
      flow_id: null,
      interaction_id: impressions ? randomUUID() : null,
      channel_id: null,
      multi_placement: false,
      offers: [{ rank: 1, offerId: randomUUID(), score: 0.5, bucket: "*" }],
      context: { hour: 14, note: `it's "quoted" \\ and {braced}` },
      scored_by: ["default-adaptive", "shadow, with a comma"],
      experiment_id: null,
      experiment_variant: null,
      qualified_count: 200,
      suppressed_count: 0,
      degraded_scoring: false,
      ...over,
    },
    impressions: Array.from({ length: impressions }, (_, i) => ({
      id: randomUUID(),
      rank: i + 1,
      offer_id: randomUUID(),
      creative_id: null,
      channel_id: null,
      placement_id: null,
      context_bucket: "*",
    })),
  };
}

/** The real store, with the size of every statement it was given counted. */
function countingStore() {
  const batches: number[] = [];
  return {
    batches,
    saveRecommendations: (batch: RecommendationWrite[]) => (batches.push(batch.length), store.saveRecommendations(batch)),
    deleteRecommendation: (tenantId: string, id: string) => store.deleteRecommendation(tenantId, id),
  };
}

async function stored(w: RecommendationWrite) {
  const [[rec]] = (await db.query("SELECT * FROM recommendations WHERE tenant_id = $1 AND id = $2", { bind: [w.tenantId, w.rec.id] })) as [any[], unknown];
  const [imps] = (await db.query(
    "SELECT id, rank, customer_id, interaction_id, created_at, outcome FROM interactions WHERE tenant_id = $1 AND recommendation_id = $2 ORDER BY rank",
    { bind: [w.tenantId, w.rec.id] },
  )) as [any[], unknown];
  return { rec, imps };
}

describe("recommendation writer (group commit)", () => {
  test("concurrent decisions share statements; each is committed, whole, when its save resolves", async () => {
    const counting = countingStore();
    const writer = new RecommendationWriter(counting, { maxInFlight: 1, maxBatch: 16 });
    const writes = Array.from({ length: 40 }, (_, i) => write(tenants[i % 2], i % 4));
    const results = await Promise.all(
      writes.map(async (w) => {
        const createdAt = await writer.save(w);
        // Answered only once committed: another connection sees the rows at once.
        return { createdAt, ...(await stored(w)) };
      }),
    );
    assert.equal(counting.batches.reduce((a, b) => a + b, 0), 40);
    assert.ok(counting.batches.length < 40 && Math.max(...counting.batches) > 1, `statements: ${counting.batches.join(", ")}`);
    assert.ok(Math.max(...counting.batches) <= 16);
    writes.forEach((w, i) => {
      const { rec, imps, createdAt } = results[i];
      assert.ok(rec, "the recommendation is stored");
      assert.equal(rec.customer_id, w.rec.customer_id);
      assert.deepEqual(rec.context, w.rec.context);
      assert.deepEqual(rec.offers, w.rec.offers);
      assert.deepEqual(rec.scored_by, w.rec.scored_by);
      assert.equal(rec.qualified_count, 200);
      assert.equal(rec.created_at.getTime(), createdAt.getTime());
      assert.deepEqual(imps.map((r: any) => r.id), w.impressions.map((r) => r.id));
      for (const imp of imps) {
        assert.equal(imp.customer_id, w.rec.customer_id);
        assert.equal(imp.interaction_id, w.rec.interaction_id);
        assert.equal(imp.outcome, "impression");
        assert.equal(imp.created_at.getTime(), createdAt.getTime());
      }
    });
  });

  test("a decision whose row cannot be stored fails alone; the rest of its batch is stored", async () => {
    const counting = countingStore();
    const writer = new RecommendationWriter(counting, { maxInFlight: 1 });
    const first = writer.save(write(tenants[0])); // runs alone, so the next ones wait and batch
    const good = [write(tenants[0]), write(tenants[1])];
    const unstorable = write(tenants[0], 3, { customer_id: null as unknown as string }); // NOT NULL refuses it
    const outcomes = await Promise.allSettled([first, writer.save(good[0]), writer.save(unstorable), writer.save(good[1])]);
    assert.deepEqual(outcomes.map((o) => o.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    assert.ok(counting.batches.includes(3), `the three waited for one statement: ${counting.batches.join(", ")}`);
    for (const w of good) assert.equal((await stored(w)).imps.length, 3);
    assert.equal((await stored(unstorable)).rec, undefined);
  });

  test("unsave takes back one decision's recommendation and impressions, and nothing of another's", async () => {
    const writer = new RecommendationWriter(countingStore());
    const [kept, taken] = [write(tenants[0]), write(tenants[0])];
    await Promise.all([writer.save(kept), writer.save(taken)]);
    await writer.unsave(tenants[1], taken.rec.id); // another tenant's id: nothing happens
    assert.equal((await stored(taken)).imps.length, 3);
    await writer.unsave(tenants[0], taken.rec.id);
    const gone = await stored(taken);
    assert.equal(gone.rec, undefined);
    assert.deepEqual(gone.imps, []);
    const still = await stored(kept);
    assert.ok(still.rec);
    assert.equal(still.imps.length, 3);
  });
});
