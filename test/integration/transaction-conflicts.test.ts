import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import type { Sequelize } from "sequelize";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { createSequelize, pgErrorCode, retryingTransaction, type Transaction } from "../../src/platform/db.js";
import { isAppError } from "../../src/platform/errors.js";
import { GRPC_CODES, httpErrorResponse, toAppError } from "../../src/transport/error-mapping.js";
import type { Logger } from "../../src/platform/logger.js";
import { createTestDatabase } from "../support/database.js";

/** Deadlocks provoked for real on PostgreSQL: retried, and when they persist a 503 with Retry-After, never a 500. */
let db: Sequelize;
before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 4 });
  await db.query("CREATE TABLE lock_pair (id int PRIMARY KEY, n int NOT NULL DEFAULT 0); INSERT INTO lock_pair (id) VALUES (1), (2)");
});
after(() => db.close());

/** A latch both sides wait on, so that each holds its first row before asking for the other's. */
function barrier(parties: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return async () => {
    if (++arrived === parties) open();
    await opened;
  };
}

const bump = (t: Transaction, id: number) => db.query("UPDATE lock_pair SET n = n + 1 WHERE id = $1", { bind: [id], transaction: t });

/** One side of a deadlock: its own row first, then (once the other side holds its row) the other row. */
function crossedLocks(meet: () => Promise<void>, first: number) {
  return async (t: Transaction) => {
    await bump(t, first);
    await meet();
    await bump(t, 3 - first);
    return first;
  };
}

/** Records warnings; an error log fails the test. */
function warningRecorder(warnings: unknown[] = []): Logger {
  return { warn: (o: unknown) => warnings.push(o), error: () => assert.fail("a transient conflict is not logged as an error"), info() {}, debug() {} } as unknown as Logger;
}

describe("deadlocks and serialization failures", () => {
  test("a real deadlock maps to 503 TRANSACTION_CONFLICT with Retry-After on every door, and its driver text is not sent", async () => {
    const meet = barrier(2);
    const results = await Promise.allSettled([db.transaction(crossedLocks(meet, 1)), db.transaction(crossedLocks(meet, 2))]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    assert.equal(failed.length, 1, "PostgreSQL aborts exactly one side of the deadlock");
    assert.equal(pgErrorCode(failed[0].reason), "40P01");

    const warnings: unknown[] = [];
    const app = toAppError(failed[0].reason, warningRecorder(warnings), "req-1");
    assert.equal(app.code, "UNAVAILABLE");
    assert.equal(app.reason, "TRANSACTION_CONFLICT");
    assert.equal(GRPC_CODES[app.code], GrpcStatus.UNAVAILABLE);
    const http = httpErrorResponse(app, "problem", "req-1");
    assert.equal(http.status, 503);
    assert.equal(http.headers["retry-after"], "1");
    assert.doesNotMatch(JSON.stringify(http.body), /deadlock|lock_pair|UPDATE/i);
    assert.equal(warnings.length, 1, "logged once, as a warning, with the request id");
  });

  test("a retrying transaction runs the losing side again, and both changes commit", async () => {
    await db.query("UPDATE lock_pair SET n = 0");
    const meet = barrier(2);
    let attempts = 0;
    const retries: string[] = [];
    const onRetry = (err: unknown) => retries.push(String(pgErrorCode(err)));
    const side = (first: number) => async (t: Transaction) => {
      attempts++;
      // Only the first round meets; a retry finds the other side committed or still running, not waiting on it.
      await bump(t, first);
      if (attempts <= 2) await meet();
      await bump(t, 3 - first);
      return first;
    };
    const results = await Promise.all([retryingTransaction(db, side(1), { onRetry }), retryingTransaction(db, side(2), { onRetry })]);
    assert.deepEqual(results, [1, 2]);
    // Under load a retry can meet the other side again; what matters is that every retry was for a deadlock.
    assert.ok(retries.length >= 1 && retries.every((code) => code === "40P01"), `retries: ${retries.join(",")}`);
    const [rows] = await db.query("SELECT n FROM lock_pair ORDER BY id");
    assert.deepEqual(rows, [{ n: 2 }, { n: 2 }], "each side bumped each row once: the aborted attempt left nothing");
  });

  test("a conflict that outlasts the attempts becomes the 503 error, not the driver's", async () => {
    const meet = barrier(2);
    const results = await Promise.allSettled([
      retryingTransaction(db, crossedLocks(meet, 1), { attempts: 1 }),
      retryingTransaction(db, crossedLocks(meet, 2), { attempts: 1 }),
    ]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    assert.equal(failed.length, 1);
    assert.ok(isAppError(failed[0].reason));
    assert.equal(failed[0].reason.reason, "TRANSACTION_CONFLICT");
    assert.equal(failed[0].reason.details.retryAfterSeconds, 1);
  });
});
