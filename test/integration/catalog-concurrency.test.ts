import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest, type RestResponse } from "../support/clients.js";

/**
 * Offer writes lock flow rows for auto-assembly; flow edits, publishes and rollbacks lock a flow
 * row and then write the audit chain. Two processes running both at once in one tenant must never
 * answer 5xx (a deadlock used to surface as 500) and must leave the chain and the flows consistent.
 */
let svc: TestService;
let child: ChildService;
let admin: { tenantId: string; apiKey: string };

before(async () => {
  svc = await startTestService();
  child = await startChildService(svc);
  admin = await svc.createTenant();
});
after(async () => {
  await child?.stop();
  await svc?.stop();
});

describe("concurrent catalog writes in one tenant, over two processes", () => {
  test("offer activations and deletions beside flow edits, publishes and rollbacks: no 5xx, chain intact", async () => {
    const on = (baseUrl: string) => (method: string, path: string, body?: unknown) =>
      rest(baseUrl, method, path, { key: admin.apiKey, body: body ?? (method === "GET" ? undefined : {}) });
    const first = on(svc.baseUrl);
    const second = on(child.baseUrl);
    const flows: string[] = [];
    for (const key of ["north", "south"]) {
      const flow = await first("POST", "/api/v1/decision-flows", { name: key, key, status: "active" });
      assert.equal(flow.status, 201, JSON.stringify(flow.body));
      assert.equal((await first("POST", `/api/v1/decision-flows/${flow.body.id}/publish`, { notes: "v1" })).status, 200);
      flows.push(flow.body.id);
    }

    const answers: RestResponse[] = [];
    const record = async (p: Promise<RestResponse>) => {
      const res = await p;
      answers.push(res);
      return res;
    };
    const ROUNDS = 12;
    const offerWriter = (call: ReturnType<typeof on>, name: string) => async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const offer = await record(call("POST", "/api/v1/offers", { name: `${name}-${i}`, status: "draft" }));
        if (offer.status !== 201) continue;
        await record(call("PUT", "/api/v1/offers", { id: offer.body.id, status: "active" }));
        if (i % 2) await record(call("DELETE", `/api/v1/offers?id=${offer.body.id}`));
      }
    };
    const flowWriter = (call: ReturnType<typeof on>, flowId: string) => async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await record(call("PUT", `/api/v1/decision-flows/${flowId}`, { description: `edit ${i}` }));
        const published = await record(call("POST", `/api/v1/decision-flows/${flowId}/publish`, { notes: `round ${i}` }));
        if (i % 3 === 2 && published.status === 200) {
          await record(call("POST", `/api/v1/decision-flows/${flowId}/rollback`, { toVersion: 1, notes: "back" }));
        }
      }
    };
    await Promise.all([
      offerWriter(first, "a")(),
      offerWriter(second, "b")(),
      flowWriter(second, flows[0])(),
      flowWriter(first, flows[1])(),
    ]);

    const failures = answers.filter((a) => a.status >= 500);
    assert.deepEqual(failures.map((f) => [f.status, f.body]), [], "no write answered 5xx");
    assert.ok(answers.every((a) => a.status < 300), JSON.stringify(answers.filter((a) => a.status >= 300).map((a) => a.body)));

    const verify = await first("GET", "/api/v1/audit-logs/verify");
    assert.equal(verify.body.intact, true, JSON.stringify(verify.body));
    // Auto-assembly saw every activation and deletion: each flow lists exactly the live active offers.
    const live = new Set<string>();
    for (let cursor = ""; ; ) {
      const page = await first("GET", `/api/v1/offers?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      for (const o of page.body.data) if (o.status === "active") live.add(o.id);
      if (!page.body.pagination.hasMore) break;
      cursor = page.body.pagination.cursor;
    }
    assert.equal(live.size, ROUNDS, "half of each writer's offers stay active");
    for (const id of flows) {
      const flow = await first("GET", `/api/v1/decision-flows/${id}`);
      assert.deepEqual(new Set(flow.body.offerIds), live);
    }
  });
});

describe("a burst of one tenant's writes on one process", () => {
  test("twenty writes at once that each read outside their transaction all succeed, quickly; another tenant is not held up", async () => {
    const t = await svc.createTenant();
    const call = (method: string, path: string, body?: unknown, key = t.apiKey) =>
      rest(svc.baseUrl, method, path, { key, body: body ?? (method === "GET" ? undefined : {}) });
    const category = await call("POST", "/api/v1/categories", { name: "burst" });
    const offer = await call("POST", "/api/v1/offers", { name: "burst offer" });
    // A collection PUT checks the category inside its transaction and reads the offer's relations
    // after it: with the lock's waiters holding the pool, the holder could get no connection.
    const started = Date.now();
    const puts = Array.from({ length: 20 }, (_, i) => call("PUT", "/api/v1/offers", { id: offer.body.id, categoryId: category.body.id, priority: i }));
    const elsewhere = (async () => {
      await new Promise((r) => setTimeout(r, 50));
      const at = Date.now();
      const res = await call("GET", "/api/v1/offers", undefined, admin.apiKey);
      return { status: res.status, ms: Date.now() - at };
    })();
    const answers = await Promise.all(puts);
    assert.deepEqual(answers.map((a) => a.status), Array(20).fill(200), JSON.stringify(answers.filter((a) => a.status !== 200).map((a) => a.body)));
    assert.ok(Date.now() - started < 8000, `the burst took ${Date.now() - started} ms`);
    const other = await elsewhere;
    assert.equal(other.status, 200);
    assert.ok(other.ms < 5000, `another tenant waited ${other.ms} ms`);
    assert.equal((await call("GET", `/api/v1/offers/${offer.body.id}`)).body.version, 21, "every write committed once and was answered");
  });
});
