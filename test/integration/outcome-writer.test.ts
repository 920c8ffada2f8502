import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Sequelize } from "sequelize";
import { createSequelize } from "../../src/platform/db.js";
import { OutcomeStore, type OutcomeWrite } from "../../src/decisions/outcome-store.js";
import { OutcomeWriter } from "../../src/decisions/outcome-writer.js";
import { createTestDatabase } from "../support/database.js";

/**
 * Group commit of Respond's rows on real PostgreSQL: outcomes that arrive while a statement runs go
 * together in one; each is answered with its own committed row, or null when its idempotency key
 * was already taken, also by an earlier outcome of the same batch; a row that cannot be stored
 * fails only its own call.
 */
let db: Sequelize;
let store: OutcomeStore;
const tenants = [randomUUID(), randomUUID()];

before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 4 });
  store = new OutcomeStore(db);
  for (const id of tenants) await db.query("INSERT INTO tenants (id, name) VALUES ($1, 'outcome writer test')", { bind: [id] });
});
after(() => db.close());

function outcome(tenantId: string, key = `k-${randomUUID()}`, over: Partial<OutcomeWrite["row"]> = {}): OutcomeWrite {
  return {
    tenantId,
    row: {
      id: randomUUID(),
      customer_id: `c-${key.slice(-6)}`,
      recommendation_id: randomUUID(),
      interaction_id: null,
      rank: 1,
      offer_id: randomUUID(),
      creative_id: null,
      channel_id: null,
      placement_id: null,
      outcome: "click",
      direction: "inbound",
      context_bucket: "*",
      idempotency_key: key,
      status: "recorded",
      payload_hash: "h",
      context: { page: `it's "quoted" \\ and {braced}` },
      outcome_details: { button: "cta" },
      conversion_value: 12.5,
      response_time: null,
      occurred_at: new Date("2026-11-27T10:00:00.000Z"),
      ...over,
    },
  };
}

function countingStore() {
  const batches: number[] = [];
  return {
    batches,
    insert: (...args: Parameters<OutcomeStore["insert"]>) => (batches.push(1), store.insert(...args)),
    insertMany: (batch: OutcomeWrite[]) => (batches.push(batch.length), store.insertMany(batch)),
  };
}

async function rowsWithKey(tenantId: string, key: string) {
  const [rows] = (await db.query("SELECT * FROM interactions WHERE tenant_id = $1 AND idempotency_key = $2", { bind: [tenantId, key] })) as [any[], unknown];
  return rows;
}

describe("outcome writer (group commit)", () => {
  test("concurrent outcomes share statements; each is committed with every field when its insert resolves", async () => {
    const counting = countingStore();
    const writer = new OutcomeWriter(counting, { maxInFlight: 1, maxBatch: 16 });
    const writes = Array.from({ length: 40 }, (_, i) => outcome(tenants[i % 2], undefined, i % 3 ? {} : { recommendation_id: null, rank: null, conversion_value: null }));
    const results = await Promise.all(
      writes.map(async (w) => {
        const row = await writer.insert(w.tenantId, w.row);
        // Answered only once committed: another connection sees the row at once.
        return { row, stored: await rowsWithKey(w.tenantId, w.row.idempotency_key) };
      }),
    );
    assert.equal(counting.batches.reduce((a, b) => a + b, 0), 40);
    assert.ok(counting.batches.length < 40 && Math.max(...counting.batches) > 1, `statements: ${counting.batches.join(", ")}`);
    writes.forEach((w, i) => {
      const { row, stored } = results[i];
      assert.equal(stored.length, 1);
      assert.equal(row!.id, w.row.id);
      for (const [column, value] of Object.entries(w.row)) assert.deepEqual(row![column as keyof typeof row], value, column);
      assert.equal(stored[0].created_at.getTime(), row!.created_at.getTime());
    });
  });

  test("a key taken earlier, or by another outcome of the same batch, answers null", async () => {
    const counting = countingStore();
    const writer = new OutcomeWriter(counting, { maxInFlight: 1 });
    const taken = outcome(tenants[0]);
    assert.ok(await store.insert(taken.tenantId, taken.row));
    const first = writer.insert(tenants[1], outcome(tenants[1]).row); // runs alone, so the next ones wait and batch
    const twins = [outcome(tenants[0], "twin"), outcome(tenants[0], "twin")];
    const again = outcome(tenants[0], taken.row.idempotency_key);
    const [, twinA, twinB, replay] = await Promise.all([first, ...[...twins, again].map((w) => writer.insert(w.tenantId, w.row))]);
    assert.deepEqual(counting.batches, [1, 3], "the three waited for one statement");
    assert.equal([twinA, twinB].filter((r) => r === null).length, 1, "one twin stored, the other told its key is taken");
    assert.equal(replay, null);
    const twinRows = await rowsWithKey(tenants[0], "twin");
    assert.equal(twinRows.length, 1);
    assert.equal(twinRows[0].id, (twinA ?? twinB)!.id);
    assert.equal((await rowsWithKey(tenants[0], taken.row.idempotency_key))[0].id, taken.row.id);
  });

  test("an outcome that cannot be stored fails alone; the rest of its batch is stored", async () => {
    const counting = countingStore();
    const writer = new OutcomeWriter(counting, { maxInFlight: 1 });
    const first = writer.insert(tenants[0], outcome(tenants[0]).row);
    const good = [outcome(tenants[0]), outcome(tenants[1])];
    const unstorable = outcome(tenants[0], undefined, { offer_id: null as unknown as string }); // NOT NULL refuses it
    const answers = await Promise.allSettled([first, writer.insert(good[0].tenantId, good[0].row), writer.insert(unstorable.tenantId, unstorable.row), writer.insert(good[1].tenantId, good[1].row)]);
    assert.deepEqual(answers.map((a) => a.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    assert.ok(counting.batches.includes(3), `the three waited for one statement: ${counting.batches.join(", ")}`);
    for (const w of good) assert.equal((await rowsWithKey(w.tenantId, w.row.idempotency_key)).length, 1);
    assert.equal((await rowsWithKey(unstorable.tenantId, unstorable.row.idempotency_key)).length, 0);
  });
});

describe("recommendation lookups by id (batched per tenant)", () => {
  test("concurrent lookups share statements; each answers its own tenant's row, null for another tenant's id or an unknown one", async () => {
    const [mine, theirs] = tenants;
    const ids = Array.from({ length: 12 }, () => randomUUID());
    for (const [i, id] of ids.entries()) {
      await db.query("INSERT INTO recommendations (tenant_id, id, customer_id, offers) VALUES ($1, $2, $3, $4::jsonb)", {
        bind: [i % 3 === 0 ? theirs : mine, id, `cust-${i}`, JSON.stringify([{ rank: 1, offerId: randomUUID() }])],
      });
    }
    const unknown = randomUUID();
    // Count the statements: each takes a connection from the pool.
    const pool = db.connectionManager as unknown as { getConnection(...args: unknown[]): Promise<unknown> };
    const getConnection = pool.getConnection.bind(pool);
    let statements = 0;
    pool.getConnection = (...args: unknown[]) => (statements++, getConnection(...args));
    try {
      // An id that is not a uuid answers null and does not fail the lookups batched with it.
      const found = await Promise.all([...ids, unknown, "not-a-uuid"].map((id) => store.recommendation(mine, id)));
      ids.forEach((id, i) => {
        if (i % 3 === 0) assert.equal(found[i], null, `${id} is the other tenant's`);
        else assert.equal(found[i]?.id, id);
        if (i % 3 !== 0) assert.equal(found[i]?.customer_id, `cust-${i}`);
      });
      assert.equal(found[ids.length], null);
      assert.equal(found[ids.length + 1], null);
      assert.ok(statements < ids.length + 1, `the 13 lookups by uuid went in ${statements} statements`);
      // The other tenant sees its own rows only.
      assert.equal((await store.recommendation(theirs, ids[0]))?.id, ids[0]);
      assert.equal(await store.recommendation(theirs, ids[1]), null);
    } finally {
      pool.getConnection = getConnection;
    }
  });
});
