import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { startTestService, type TestService } from "../support/service.js";
import { AuditLog } from "../../src/audit/audit-log.js";
import { AuditStore } from "../../src/audit/audit-store.js";
import { createExperiments, type Experiments } from "../../src/experiments/experiments.js";
import type { ModelPromoter } from "../../src/models/model-promotion.js";
import { CHAMPION_VARIANT, HOLDOUT_VARIANT } from "../../src/core/index.js";
import { tenantCalls, unique, type Tenant } from "../support/tenant-calls.js";

let svc: TestService;
const { call, create } = tenantCalls(() => svc.baseUrl);




function close(actual: number, expected: number, what: string) {
  assert.ok(Math.abs(actual - expected) <= 1e-9, `${what}: ${actual} vs ${expected}`);
}

/**
 * Reference scenario "three" of `python3 test/reference/experiment_statistics.py` (standard library
 * only; SciPy agreed where installed): holdout 120 customers / 9 converted, champion 480 / 52,
 * challenger b 470 / 71, split 10% holdout then 50/50. Regenerate with that command.
 */
const REFERENCE = {
  variants: [
    { variant: "__holdout__", samples: 120, conversions: 9, rate: 0.075, wilsonLower: 0.0399571153959603, wilsonUpper: 0.13640917605993766 },
    {
      variant: "__champion__", samples: 480, conversions: 52, rate: 0.10833333333333334, wilsonLower: 0.08357536561240668, wilsonUpper: 0.13931057533929436,
      absoluteUplift: 0.03333333333333334, relativeUplift: 0.44444444444444453, zScore: 1.080702888087907, pValue: 0.2798292979917517, significant: false,
    },
    {
      variant: "b", samples: 470, conversions: 71, rate: 0.15106382978723404, wilsonLower: 0.12152479103734638, wilsonUpper: 0.1862605580616269,
      absoluteUplift: 0.07606382978723404, relativeUplift: 1.0141843971631206, zScore: 2.172269299865678, pValue: 0.02983535624105779, significant: true,
    },
  ] as Array<Record<string, number | string | boolean>>,
  /** The same at confidenceLevel 0.9: only the intervals differ. */
  wilson90: [[0.04415310657151096, 0.1245886052635491], [0.08715677792067132, 0.1339004378107717], [0.12589492806602876, 0.18022702344890584]],
  srm: { chiSquare: 1.8587746625129804, pValue: 0.3947955151631368 },
  requiredSampleSize: 20246,
  /** ?mde=0.25&alpha=0.01&power=0.9 */
  requiredSampleSizeCustom: 6538,
};

/** Champion and challenger models, an offer, and an experiment over them (10% holdout, 50/50). */
async function setup(extra: Record<string, unknown> = {}) {
  const t = await svc.createTenant();
  const offer = await create("offers", { name: unique("offer"), status: "active" }, t);
  const champion = await create("algorithm-models", { name: unique("m"), key: unique("m"), type: "adaptive", family: "f" }, t);
  const challenger = await create("algorithm-models", { name: unique("m"), key: unique("m"), type: "adaptive", family: "f" }, t);
  await create("decision-flows", {
    name: unique("flow"),
    key: unique("flow"),
    status: "active",
    config: { nodes: [{ type: "score", modelKey: champion.key }] },
  }, t);
  const experiment = await create("experiments", {
    name: unique("exp"),
    championModelId: champion.id,
    trafficSplit: { championPct: 50 },
    challengers: [{ modelId: challenger.id, key: "b", trafficPct: 50 }],
    holdoutPercent: 10,
    ...extra,
  }, t);
  return { t, offer, champion, challenger, experiment };
}

/**
 * `samples` customers exposed to `variant` and the first `conversions` of them converted, written
 * as Recommend and Respond write them. Noise that must not count: a second recommendation and a
 * second positive outcome for converted customers, impression and negative rows for the others.
 */
async function seed(t: Tenant, experimentId: string, offerId: string, variant: string, samples: number, conversions: number) {
  await svc.sql(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, experiment_id, experiment_variant)
     SELECT $1::uuid, gen_random_uuid(), $3::text || '-' || lpad(g::text, 5, '0'), '[]'::jsonb, $2::uuid, $3::text FROM generate_series(1, $4::int) g
     UNION ALL
     SELECT $1::uuid, gen_random_uuid(), $3::text || '-' || lpad(g::text, 5, '0'), '[]'::jsonb, $2::uuid, $3::text FROM generate_series(1, $5::int) g`,
    [t.tenantId, experimentId, variant, samples, Math.min(samples, conversions + 3)],
  );
  await svc.sql(
    `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, offer_id, outcome)
     SELECT r.tenant_id, gen_random_uuid(), r.customer_id, r.id, $4::uuid,
       CASE WHEN r.customer_id <= $3::text || '-' || lpad($5::text, 5, '0') THEN o.outcome ELSE o.other END
     FROM recommendations r, (VALUES ('click', 'impression'), ('conversion', 'dismiss')) o(outcome, other)
     WHERE r.tenant_id = $1 AND r.experiment_id = $2 AND r.experiment_variant = $3`,
    [t.tenantId, experimentId, variant, offerId, conversions],
  );
}

async function seedReference(t: Tenant, experimentId: string, offerId: string) {
  await seed(t, experimentId, offerId, HOLDOUT_VARIANT, 120, 9);
  await seed(t, experimentId, offerId, CHAMPION_VARIANT, 480, 52);
  await seed(t, experimentId, offerId, "b", 470, 71);
}

before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

describe("GET /api/v1/experiments/{id}/results", () => {
  test("every figure equals the reference to 1e-9; the holdout has the first seven", async () => {
    const { t, offer, champion, challenger, experiment } = await setup();
    await seedReference(t, experiment.id, offer.id);
    const res = await call("GET", `/api/v1/experiments/${experiment.id}/results`, t.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { variants, requiredSampleSize, srm, parameters } = res.body;
    assert.deepEqual(variants.map((v: any) => v.variant), ["__holdout__", "__champion__", "b"]);
    assert.deepEqual(variants.map((v: any) => v.modelId), [null, champion.id, challenger.id]);
    variants.forEach((v: any, i: number) => {
      const expected = REFERENCE.variants[i];
      assert.deepEqual(Object.keys(v).sort(), [...Object.keys(expected), "modelId"].sort(), `${v.variant} fields`);
      for (const [field, value] of Object.entries(expected)) {
        if (typeof value === "number") close(v[field], value, `${v.variant}.${field}`);
        else assert.equal(v[field], value, `${v.variant}.${field}`);
      }
    });
    assert.equal(requiredSampleSize, REFERENCE.requiredSampleSize);
    close(srm.chiSquare, REFERENCE.srm.chiSquare, "srm.chiSquare");
    close(srm.pValue, REFERENCE.srm.pValue, "srm.pValue");
    assert.equal(srm.mismatch, false);
    assert.deepEqual(parameters, { confidenceLevel: 0.95, alpha: 0.05, power: 0.8, minimumDetectableEffect: 0.1, baselineRate: 0.075 });
  });

  test("query parameters: confidenceLevel moves the intervals; power, alpha and mde the sample size", async () => {
    const { t, offer, experiment } = await setup();
    await seedReference(t, experiment.id, offer.id);
    const at90 = await call("GET", `/api/v1/experiments/${experiment.id}/results?confidenceLevel=0.9`, t.apiKey);
    at90.body.variants.forEach((v: any, i: number) => {
      close(v.wilsonLower, REFERENCE.wilson90[i][0], `${v.variant} lower`);
      close(v.wilsonUpper, REFERENCE.wilson90[i][1], `${v.variant} upper`);
    });
    assert.equal(at90.body.parameters.alpha, 0.1);
    const custom = await call("GET", `/api/v1/experiments/${experiment.id}/results?mde=0.25&alpha=0.01&power=0.9`, t.apiKey);
    assert.equal(custom.body.requiredSampleSize, REFERENCE.requiredSampleSizeCustom);
    assert.deepEqual(custom.body.parameters, { confidenceLevel: 0.95, alpha: 0.01, power: 0.9, minimumDetectableEffect: 0.25, baselineRate: 0.075 });
  });

  test("a broken split shows as a sample ratio mismatch", async () => {
    const { t, offer, experiment } = await setup();
    await seed(t, experiment.id, offer.id, HOLDOUT_VARIANT, 100, 5);
    await seed(t, experiment.id, offer.id, CHAMPION_VARIANT, 450, 40);
    await seed(t, experiment.id, offer.id, "b", 300, 30);
    const res = await call("GET", `/api/v1/experiments/${experiment.id}/results`, t.apiKey);
    assert.equal(res.body.srm.mismatch, true);
    assert.ok(res.body.srm.pValue < 0.001, JSON.stringify(res.body.srm));
  });

  test("end to end: Recommend exposes, Respond converts; a customer counts once; no holdout, no uplift", async () => {
    const { t, experiment } = await setup({ holdoutPercent: 0, status: "active" });
    const key = (await call("POST", "/api/v1/api-keys", t.apiKey, { name: unique("sdk") })).body.key;
    const decided = [];
    for (const customerId of ["a", "b", "c", "d", "a"]) decided.push((await call("POST", "/api/v1/recommend", key, { customerId })).body);
    const respond = (rec: any, outcome: string) =>
      call("POST", "/api/v1/respond", key, { customerId: rec.customerId, recommendationId: rec.recommendationId, rank: 1, outcome, idempotencyKey: unique("k") });
    assert.equal((await respond(decided[0], "click")).status, 200);
    assert.equal((await respond(decided[4], "conversion")).status, 200, "customer a converts twice, on two recommendations");
    assert.equal((await respond(decided[1], "dismiss")).status, 200, "a negative outcome is no conversion");
    const expected = new Map<string, { samples: number; conversions: number }>();
    for (const [i, rec] of decided.entries()) {
      const counts = expected.get(rec.experiment.variant) ?? { samples: 0, conversions: 0 };
      if (i < 4) counts.samples++;
      if (i === 0) counts.conversions++;
      expected.set(rec.experiment.variant, counts);
    }
    const res = await call("GET", `/api/v1/experiments/${experiment.id}/results`, t.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const v of res.body.variants) {
      assert.deepEqual({ samples: v.samples, conversions: v.conversions }, expected.get(v.variant) ?? { samples: 0, conversions: 0 }, v.variant);
      if (v.variant !== HOLDOUT_VARIANT) {
        assert.equal(v.significant, false);
        assert.equal("absoluteUplift" in v, false, "no holdout samples: no uplift");
      }
    }
    assert.equal(res.body.variants[0].wilsonLower, 0);
    assert.equal(res.body.variants[0].wilsonUpper, 1);
  });
});

describe("auto-promotion through the model registry", () => {
  /** Auto-promotion over the service's own registry promoter, so moves, guard and audit are the real ones. */
  function experimentsWith(promoter: ModelPromoter): Experiments {
    const { db } = svc.running.foundation;
    const { catalog, decisions } = svc.running.services;
    return createExperiments({
      db,
      audit: new AuditLog(new AuditStore(db)),
      logger: pino({ level: "silent" }),
      references: { liveIds: catalog.liveIds, positiveOutcomes: decisions.positiveOutcomes },
      promoter,
      changed: decisions.configChanged,
    });
  }

  const startedDaysAgo = (t: Tenant, id: string, days: number) =>
    svc.sql("UPDATE experiments SET started_at = now() - make_interval(days => $3::int) WHERE tenant_id = $1 AND id = $2", [t.tenantId, id, days]);

  /** The experiment's models in the registry: the champion serving family `f`, the challenger staged. */
  async function staged(s: Awaited<ReturnType<typeof setup>>) {
    const promote = async (m: any, toStatus: string) => {
      const res = await call("POST", `/api/v1/algorithm-models/${m.id}/promote`, s.t.apiKey, { toStatus });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    await promote(s.champion, "challenger");
    await promote(s.champion, "champion");
    await promote(s.challenger, "challenger");
    // What Recommend records for the decisions a variant scored: the rollback guard counts them.
    await svc.sql("UPDATE recommendations SET scored_by = ARRAY[$3]::text[] WHERE tenant_id = $1 AND experiment_variant = 'b' AND experiment_id = $2", [
      s.t.tenantId,
      s.experiment.id,
      s.challenger.id,
    ]);
  }

  test("a challenger beating the champion by the threshold, significantly, after promoteAfterDays becomes champion", async () => {
    const experiments = experimentsWith(svc.running.services.modelPromoter);
    const s = await setup({ status: "active", autoPromote: true, promoteThreshold: 0.3, promoteAfterDays: 7 });
    const { t, offer, champion, challenger, experiment } = s;
    await seedReference(t, experiment.id, offer.id);
    await staged(s);
    const mine = (outcomes: Awaited<ReturnType<Experiments["autoPromotion"]["runAcrossTenants"]>>) => outcomes.filter((o) => o.tenantId === t.tenantId);

    assert.deepEqual(mine(await experiments.autoPromotion.runAcrossTenants(new Date())), [], "promoteAfterDays have not passed");
    await startedDaysAgo(t, experiment.id, 8);
    const outcomes = mine(await experiments.autoPromotion.runAcrossTenants(new Date()));
    assert.deepEqual(outcomes, [{ tenantId: t.tenantId, experimentId: experiment.id, result: "promoted", modelId: challenger.id }]);

    const registry = await svc.sql("SELECT id, registry_status FROM algorithm_models WHERE tenant_id = $1 ORDER BY registry_status", [t.tenantId]);
    assert.deepEqual(registry.map((r) => [r.id, r.registry_status]), [[champion.id, "challenger"], [challenger.id, "champion"]]);
    const [move] = await svc.sql(
      `SELECT user_name, changes FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND entity_type = 'algorithm_model' ORDER BY seq DESC LIMIT 1`,
      [t.tenantId, challenger.id],
    );
    assert.equal(move.user_name, "system (experiment auto-promotion)");
    assert.deepEqual(move.changes.registryMove, { from: "challenger", to: "champion" });
    const snapshot = move.changes.metricsSnapshot;
    assert.deepEqual([snapshot.experimentId, snapshot.variant, snapshot.replacedChampionModelId], [experiment.id, "b", champion.id]);
    assert.deepEqual([snapshot.challenger, snapshot.champion], [{ samples: 470, conversions: 71 }, { samples: 480, conversions: 52 }]);
    // Reference "three", challengerVsChampion: z 1.961390097749455, p 0.04983353423946338 (< 0.05).
    close(snapshot.zScore, 1.961390097749455, "z vs champion");
    close(snapshot.pValue, 0.04983353423946338, "p vs champion");
    close(snapshot.relativeUplift, 71 / 470 / (52 / 480) - 1, "relative uplift vs champion");

    const after = (await call("GET", `/api/v1/experiments/${experiment.id}`, t.apiKey)).body;
    assert.equal(after.status, "archived");
    assert.equal(after.promotedModelId, challenger.id);
    assert.ok(after.promotedAt);
    const [audit] = await svc.sql(
      "SELECT user_name, before->>'status' AS was, after->>'status' AS now FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND action = 'update'",
      [t.tenantId, experiment.id],
    );
    assert.deepEqual(audit, { user_name: "system (experiment auto-promotion)", was: "active", now: "archived" });
    assert.deepEqual(mine(await experiments.autoPromotion.runAcrossTenants(new Date())), [], "archived: evaluated once");
  });

  test("no promotion below the threshold; a registry refusal leaves the experiment running; the scheduled job runs the same", async () => {
    const experiments = experimentsWith(svc.running.services.modelPromoter);
    const high = await setup({ status: "active", autoPromote: true, promoteThreshold: 0.5, promoteAfterDays: 1 });
    await seedReference(high.t, high.experiment.id, high.offer.id);
    await staged(high);
    await startedDaysAgo(high.t, high.experiment.id, 2);
    const [job] = experiments.jobs;
    assert.deepEqual([job.name, job.route, job.schedule], ["experiments.auto-promote", "tick", { everyMs: 3_600_000 }]);
    await job.run(new Date());
    const outcome = (await experiments.autoPromotion.runAcrossTenants(new Date())).find((o) => o.tenantId === high.t.tenantId);
    assert.deepEqual(outcome, { tenantId: high.t.tenantId, experimentId: high.experiment.id, result: "no_winner" }, "a relative uplift of 0.39 is below 0.5");
    const [unmoved] = await svc.sql("SELECT registry_status FROM algorithm_models WHERE tenant_id = $1 AND id = $2", [high.t.tenantId, high.challenger.id]);
    assert.equal(unmoved.registry_status, "challenger");

    // A challenger still in draft: the registry refuses draft → champion (docs/models.md).
    const draft = await setup({ status: "active", autoPromote: true, promoteThreshold: 0.1, promoteAfterDays: 0 });
    await seedReference(draft.t, draft.experiment.id, draft.offer.id);
    const refused = (await experiments.autoPromotion.runAcrossTenants(new Date())).find((o) => o.tenantId === draft.t.tenantId);
    assert.equal(refused?.result, "refused");
    assert.match(refused!.reason!, /toStatus/);
    const still = (await call("GET", `/api/v1/experiments/${draft.experiment.id}`, draft.t.apiKey)).body;
    assert.deepEqual([still.status, still.promotedModelId], ["active", null]);
  });
});
