import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { createSequelize } from "../../src/platform/db.js";
import { CronService } from "../../gen/decisioning/v1/scheduling_pb.js";
import { startTestService, type TestService } from "../support/service.js";
import { createTestDatabase } from "../support/database.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { createSlotTable, slotRecorderJob, slotRows } from "../support/slot-recorder.js";

const SECRET = "the-cron-secret-of-this-test-0123456789";
/** Slow enough that concurrent calls overlap; daily, so that every call of this test is in one slot. */
const DAILY = { name: "daily-tick", schedule: { everyMs: 86_400_000 }, route: "tick" as const, runMs: 600 };

let withoutSecret: TestService;
let withSecret: TestService;
let apiKey: string;

before(async () => {
  const databaseUrl = await createTestDatabase();
  const setup = createSequelize(databaseUrl, { poolMax: 1 });
  await createSlotTable(setup);
  await setup.close();
  // SCHEDULER=off: only the routes run the job here.
  withSecret = await startTestService({ cronSecret: SECRET, schedulerEnabled: false }, databaseUrl, undefined, {
    extraJobs: (f) => [slotRecorderJob(f.db, DAILY)],
  });
  withoutSecret = await startTestService({ cronSecret: null, schedulerEnabled: false });
  apiKey = (await withSecret.createTenant()).apiKey;
});
after(() => Promise.all([withSecret?.stop(), withoutSecret?.stop()]));

/** This test's job among the tick route's runs (the domains register theirs there too). */
const ofDaily = <R extends { job: string }>(runs: R[]): R => runs.find((r) => r.job === DAILY.name)!;

const ROUTES = [
  ["/api/cron/tick", "runTick"],
  ["/api/v1/cron/approvals-expire", "expireApprovals"],
  ["/api/v1/cron/scheduled-retrains", "runScheduledRetrains"],
] as const;

/** Every door's answer to one cron method with the given headers: [door, HTTP status or RPC code, reason]. */
async function allDoors(svc: TestService, path: string, method: (typeof ROUTES)[number][1], headers: Record<string, string>) {
  const out: Array<[string, number, string | null]> = [];
  for (const verb of ["GET", "POST"]) {
    const res = await rest(svc.baseUrl, verb, path, { headers });
    out.push([`rest ${verb}`, res.status, res.headers.get("x-error-reason")]);
  }
  for (const [door, client] of [
    ["connect", connectClient(CronService, svc.baseUrl)],
    ["grpc", grpcClient(CronService, svc.grpcAddress)],
  ] as const) {
    const err = await rpcError(client[method]({}, { headers }));
    out.push([door, err.code, err.reason]);
  }
  return out;
}

const expectAll = (http: number, code: Code, reason: string) => [
  ["rest GET", http, reason],
  ["rest POST", http, reason],
  ["connect", code, reason],
  ["grpc", code, reason],
];

describe("cron secret (spec 5.6)", () => {
  for (const [path, method] of ROUTES) {
    test(`${path}: 401 CRON_SECRET_NOT_SET on every door when the server has no secret`, async () => {
      assert.deepEqual(await allDoors(withoutSecret, path, method, { authorization: `Bearer ${SECRET}` }), expectAll(401, Code.Unauthenticated, "CRON_SECRET_NOT_SET"));
    });

    test(`${path}: 401 INVALID_CRON_SECRET on every door for a wrong, missing or non-Bearer secret, or an API key`, async () => {
      for (const headers of [
        { authorization: "Bearer not-the-secret" },
        {},
        { authorization: SECRET },
        { authorization: `Bearer ${SECRET}x` },
        // (with a JSON content type, so that the CSRF guard of API-key POSTs lets it reach authentication)
        { "x-api-key": apiKey, "content-type": "application/json" },
      ] as Array<Record<string, string>>) {
        assert.deepEqual(await allDoors(withSecret, path, method, headers), expectAll(401, Code.Unauthenticated, "INVALID_CRON_SECRET"), JSON.stringify(headers));
      }
    });
  }

  test("the 401 is the problem shape and names the header", async () => {
    const res = await rest(withSecret.baseUrl, "POST", "/api/cron/tick", { bearer: "wrong" });
    assert.equal(res.status, 401);
    assert.equal(res.body.title, "Unauthorized");
    assert.match(res.body.detail, /Authorization: Bearer <CRON_SECRET>/);
  });
});

describe("running jobs on demand (spec 4.21)", () => {
  test("approvals-expire runs the approvals' expiry; a route without jobs answers ok with no runs, on every door", async () => {
    const res = await rest(withSecret.baseUrl, "POST", "/api/v1/cron/approvals-expire", { bearer: SECRET });
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.route, "approvals-expire");
    assert.deepEqual(res.body.runs.map((r: { job: string }) => r.job), ["approvals-expire"]);
    const viaConnect = await connectClient(CronService, withSecret.baseUrl).runScheduledRetrains({}, { headers: { authorization: `Bearer ${SECRET}` } });
    assert.equal(viaConnect.route, "scheduled-retrains");
    assert.deepEqual(viaConnect.runs, []);
    const viaGrpc = await grpcClient(CronService, withSecret.grpcAddress).expireApprovals({}, { headers: { authorization: `Bearer ${SECRET}` } });
    assert.equal(viaGrpc.ok, true);
  });

  test("every approvals-expire call expires what is stale at the call, also later in the slot of an earlier call (spec 3.5, 4.21)", async () => {
    const headers = { authorization: `Bearer ${SECRET}` };
    /** A pending request that became stale a minute ago (APPROVAL_MAX_AGE_HOURS is the default, 168). */
    const staleRequest = async () => {
      const res = await rest(withSecret.baseUrl, "POST", "/api/v1/approvals", {
        key: apiKey,
        body: { entityType: "channel", action: "create", payload: { name: `c-${Math.random().toString(36).slice(2)}` } },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      await withSecret.sql(`UPDATE approval_requests SET created_at = now() - interval '168 hours 1 minute' WHERE id = $1`, [res.body.id]);
      return res.body.id as string;
    };
    const status = async (id: string) => (await withSecret.sql(`SELECT status FROM approval_requests WHERE id = $1`, [id]))[0].status;

    const first = await rest(withSecret.baseUrl, "POST", "/api/v1/cron/approvals-expire", { headers });
    assert.equal(first.body.runs[0].status, "succeeded", JSON.stringify(first.body));
    // Stale after the first call, in the same hour: the next call on each door expires it.
    const viaRest = await staleRequest();
    const second = await rest(withSecret.baseUrl, "GET", "/api/v1/cron/approvals-expire", { headers });
    const before = Date.now();
    assert.deepEqual([second.body.runs[0].status, second.body.runs[0].reason], ["succeeded", null], JSON.stringify(second.body));
    assert.ok(Math.abs(Date.parse(second.body.runs[0].slot) - before) < 10_000, "the call's own slot, its instant");
    assert.equal(await status(viaRest), "expired");
    for (const client of [connectClient(CronService, withSecret.baseUrl), grpcClient(CronService, withSecret.grpcAddress)]) {
      const id = await staleRequest();
      const answer = await client.expireApprovals({}, { headers });
      assert.deepEqual(answer.runs.map((r) => [r.job, r.status]), [["approvals-expire", "succeeded"]]);
      assert.equal(await status(id), "expired");
    }
    const [{ n }] = await withSecret.sql(`SELECT count(*)::int AS n FROM scheduled_runs WHERE job_name = 'approvals-expire' AND status = 'succeeded'`);
    assert.ok(n >= 4, "each call's run is recorded in scheduled_runs");
  });

  test("concurrent tick calls on every door start the slot once; the others answer already_running, later calls already_succeeded", async () => {
    const headers = { authorization: `Bearer ${SECRET}` };
    const connect = connectClient(CronService, withSecret.baseUrl);
    const grpc = grpcClient(CronService, withSecret.grpcAddress);
    const restRun = (verb: string) => rest(withSecret.baseUrl, verb, "/api/cron/tick", { headers }).then((r) => {
      assert.equal(r.status, 200);
      return ofDaily(r.body.runs) as { job: string; slot: string; status: string; reason: string | null; attempts: number };
    });
    const answers = await Promise.all([
      restRun("POST"),
      restRun("GET"),
      restRun("POST"),
      connect.runTick({}, { headers }).then((r) => ({ ...ofDaily(r.runs), reason: ofDaily(r.runs).reason ?? null })),
      grpc.runTick({}, { headers }).then((r) => ({ ...ofDaily(r.runs), reason: ofDaily(r.runs).reason ?? null })),
    ]);
    const statuses = answers.map((a) => `${a.status}/${a.reason}`).sort();
    assert.deepEqual(statuses, ["skipped/already_running", "skipped/already_running", "skipped/already_running", "skipped/already_running", "succeeded/null"]);
    assert.ok(answers.every((a) => a.job === "daily-tick"));

    const again = await rest(withSecret.baseUrl, "GET", "/api/cron/tick", { headers });
    assert.equal(again.body.ok, true);
    const daily = ofDaily(again.body.runs as Array<{ job: string; slot: string; status: string; reason: string | null }>);
    assert.equal(daily.status, "skipped");
    assert.equal(daily.reason, "already_succeeded");
    assert.equal(Date.parse(daily.slot), Math.floor(Date.now() / 86_400_000) * 86_400_000, "the slot the day is in");
    assert.equal((await slotRows(withSecret.running.foundation.db, "daily-tick")).length, 1);
  });
});
