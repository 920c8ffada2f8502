import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import type { Sequelize } from "sequelize";
import { createSequelize, preparedRows, transientConflictError } from "../../src/platform/db.js";
import { createLogger, type Logger } from "../../src/platform/logger.js";
import { toAppError } from "../../src/transport/error-mapping.js";
import { createTestDatabase } from "../support/database.js";

/** Failing queries on a real PostgreSQL, logged through the service's logger, captured line by line. */
const SECRET = "krn_7f3a9c1e5b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a";
let db: Sequelize;
before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 2 });
  await db.query("CREATE TABLE secrets_probe (name text PRIMARY KEY, n int NOT NULL)");
  await db.query("INSERT INTO secrets_probe VALUES ($1, 1)", { bind: [SECRET] });
  await db.query("CREATE TABLE short_probe (v varchar(8))");
});
after(() => db.close());

function capturingLogger(): { logger: Logger; lines: () => string; entries: () => Array<Record<string, any>> } {
  const written: string[] = [];
  const logger = createLogger("debug", { write: (line: string) => void written.push(line) });
  return { logger, lines: () => written.join(""), entries: () => written.map((l) => JSON.parse(l)) };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => assert.fail("the query was expected to fail"),
    (err: unknown) => err,
  );

describe("logs carry no bind values", () => {
  const cases: Array<[string, () => Promise<unknown>, string]> = [
    ["an unknown setting (its message quotes the name)", () => db.query("SELECT current_setting($1)", { bind: [SECRET] }), "42704"],
    ["a unique violation (its detail and fields hold the key)", () => db.query("INSERT INTO secrets_probe VALUES ($1, 2)", { bind: [SECRET] }), "23505"],
    ["a not-null violation (its detail holds the whole row)", () => db.query("INSERT INTO secrets_probe VALUES ($1, NULL)", { bind: [SECRET + "x"] }), "23502"],
    ["a prepared statement on the pool (a pg error, not Sequelize's)", () => preparedRows(db, "probe_setting", "SELECT current_setting($1)", [SECRET]), "42704"],
  ];
  for (const [what, query, sqlstate] of cases) {
    test(what, async () => {
      const err = await failure(query());
      assert.match(inspect(err, { depth: 5 }), new RegExp(SECRET), "the error itself carries the value somewhere");
      const { logger, lines, entries } = capturingLogger();
      const app = toAppError(err, logger, "req-1");
      assert.equal(app.code, "INTERNAL");
      logger.warn({ err: transientConflictError(err) }, "an AppError caused by it");
      assert.doesNotMatch(lines(), new RegExp(SECRET.slice(4, 24)), "neither the value nor any part of it is printed");
      const [logged, wrapped] = entries();
      assert.equal(logged.err.code, sqlstate, "the SQLSTATE stays, to tell what went wrong");
      assert.equal(logged.requestId, "req-1");
      assert.match(logged.err.stack, /^\s+at /, "the stack frames stay");
      assert.equal(wrapped.err.reason, "TRANSACTION_CONFLICT");
      assert.equal(wrapped.err.cause.code, sqlstate, "a cause is logged by the same rules");
    });
  }

  test("a value PostgreSQL refuses (22P02, 22021, 22001, ...) is the caller's 400 UNSTORABLE_VALUE, logged without the value", async () => {
    const refusals: Array<[() => Promise<unknown>, string]> = [
      [() => db.query("SELECT $1::int", { bind: [SECRET] }), "22P02"],
      [() => db.query("INSERT INTO short_probe VALUES ($1)", { bind: [SECRET] }), "22001"],
      [() => db.query("SELECT $1::smallint", { bind: ["99999"] }), "22003"],
      [() => db.query("SELECT $1::timestamptz", { bind: [SECRET] }), "22007"],
      [() => db.query("SELECT convert_from('\\x00'::bytea, 'UTF8') || $1", { bind: [SECRET] }), "22021"],
    ];
    for (const [query, sqlstate] of refusals) {
      const { logger, lines, entries } = capturingLogger();
      const app = toAppError(await failure(query()), logger, "req-2");
      assert.equal(app.code, "INVALID_ARGUMENT", sqlstate);
      assert.equal(app.reason, "UNSTORABLE_VALUE");
      assert.match(app.message, /^The request holds a value that cannot be stored: /);
      assert.doesNotMatch(app.message + lines(), new RegExp(SECRET.slice(4, 24)));
      const [logged] = entries();
      assert.equal(logged.level, 40, "logged at warn: the request screen let it through");
      assert.equal(logged.err.cause.code, sqlstate);
    }
  });

  test("credentials in headers and bodies are censored", () => {
    const { logger, lines } = capturingLogger();
    logger.info({ req: { headers: { authorization: `Bearer ${SECRET}`, "x-api-key": SECRET, cookie: `s=${SECRET}` } } }, "request");
    logger.info({ headers: { "x-api-key": SECRET }, body: { client_secret: SECRET, clientSecret: SECRET } }, "request");
    assert.doesNotMatch(lines(), new RegExp(SECRET.slice(4, 24)));
    assert.match(lines(), /\[redacted\]/);
  });
});
