import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  chooseScoringPath,
  createWorkerScoringCache,
  NO_EVIDENCE,
  packScores,
  scoreCandidates,
  scorePooledTask,
  unpackScores,
  type ModelConfig,
  type ScoreTask,
  type ScoringOffer,
} from "../../src/core/index.js";
import { DEFAULT_POOL_MIN_TREE_WALKS, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/platform/logger.js";
import { createScoringPool, modelVersionRef } from "../../src/platform/scoring-pool.js";
import { customers, xgboostTrees } from "../../bench/workload.js";

/**
 * The scoring pool on real worker threads (workers/scoring-worker.ts): workers keep models and
 * offers by reference, score exactly as inline scoring does, take a model update before any
 * decision uses it, and a worker that dies or does not answer in time costs speed, not the decision.
 */
const who = customers(1)[0];

function offers(n: number, salt = 0): ScoringOffer[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i + salt * 1000).padStart(12, "0")}`,
    priority: (i * 37 + salt) % 101,
    businessValue: (i * 53) % 101,
  }));
}

function gbt(trees: number, seed = 42): ModelConfig {
  return { id: "gbt", key: "gbt", type: "gradient_boosted", trees: xgboostTrees(trees, 4, seed) };
}

function task(model: ModelConfig, candidates: ScoringOffer[], extra: Partial<ScoreTask> = {}): ScoreTask {
  return {
    candidates,
    customer: who.attributes,
    context: who.context,
    models: { gbt: model },
    modelKey: "gbt",
    shadowModelKeys: [],
    evidence: NO_EVIDENCE,
    clv: null,
    seed: "pool-test",
    explain: false,
    ...extra,
  };
}

const pools: Array<ReturnType<typeof createScoringPool>> = [];
function pool(options: Parameters<typeof createScoringPool>[1]) {
  const p = createScoringPool(createLogger("silent"), options);
  pools.push(p);
  return p;
}
after(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

describe("scoring pool", () => {
  test("the 100-tree, 200-candidate task goes to the pool by default, and scores as inline does", async () => {
    const t = task(gbt(100), offers(200));
    assert.equal(DEFAULT_POOL_MIN_TREE_WALKS <= 5_000, true);
    assert.equal(chooseScoringPath(t, loadConfig({}).scoringPoolMinTreeWalks), "pool");
    const p = pool({ threads: 1, timeoutMs: 60_000 });
    assert.deepEqual(await p.score("t1", t), scoreCandidates(t));
    // The second task finds model and offers in the worker: still the same scores, no fallback.
    assert.deepEqual(await p.score("t1", t), scoreCandidates(t));
    assert.equal(p.fallbacks(), 0);
    assert.equal(p.threads(), 1);
  });

  test("explanations, shadow models, a failing model and a missing shadow come back as inline scoring gives them", async () => {
    const broken: ModelConfig = { id: "bad", key: "bad", type: "gradient_boosted", trees: [] as never };
    const t = task(gbt(20), offers(30), {
      explain: true,
      models: { gbt: gbt(20), shadow: { ...gbt(10, 7), id: "shadow", key: "shadow" }, bad: broken },
      shadowModelKeys: ["shadow", "absent"],
    });
    const p = pool({ threads: 1, timeoutMs: 60_000 });
    assert.deepEqual(await p.score("t1", t), scoreCandidates(t));
    const failing = task(broken, offers(5));
    assert.deepEqual(await p.score("t1", { ...failing, models: { gbt: broken } }), scoreCandidates({ ...failing, models: { gbt: broken } }));
    assert.equal(p.fallbacks(), 0);
  });

  test("a model update reaches every worker before a decision uses it", async () => {
    const p = pool({ threads: 2, timeoutMs: 60_000 });
    const candidates = offers(200);
    const v1 = task(gbt(50, 1), candidates);
    // Concurrent tasks start the second thread; both now hold version 1.
    await Promise.all(Array.from({ length: 8 }, () => p.score("t1", v1)));
    assert.equal(p.threads(), 2);
    // The update: same tenant, same model id and key, other trees (a recompiled snapshot's new object).
    const v2 = task(gbt(50, 2), candidates);
    const expected = scoreCandidates(v2);
    assert.notDeepEqual(expected, scoreCandidates(v1), "the update changes the scores");
    const results = await Promise.all(Array.from({ length: 16 }, () => p.score("t1", v2)));
    for (const scores of results) assert.deepEqual(scores, expected);
    // Another tenant's model with the same id is another reference: it never scores this tenant's decision.
    assert.notEqual(modelVersionRef("t1", v2.models.gbt), modelVersionRef("t2", v2.models.gbt));
    assert.notEqual(modelVersionRef("t1", v1.models.gbt), modelVersionRef("t1", v2.models.gbt));
    assert.equal(p.fallbacks(), 0);
  });

  test("a worker that does not answer in time: the task is scored inline", async () => {
    const p = pool({ threads: 1, timeoutMs: 1 });
    // 400 trees × 2,000 candidates takes far longer than 1 ms, and the first task also starts the thread.
    const t = task(gbt(400), offers(2000));
    assert.deepEqual(await p.score("t1", t), scoreCandidates(t));
    assert.ok(p.fallbacks() >= 1);
  });

  test("a worker that dies mid-task: the task is scored inline, and the next one finds a new worker", async () => {
    const p = pool({ threads: 1, timeoutMs: 60_000 });
    const small = task(gbt(10), offers(10));
    await p.score("t1", small); // the thread is up
    const big = task(gbt(400), offers(4000));
    const scored = p.score("t1", big);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [worker] = p.workers();
    await worker.terminate();
    assert.deepEqual(await scored, scoreCandidates(big));
    assert.equal(p.fallbacks(), 1);
    assert.deepEqual(await p.score("t1", small), scoreCandidates(small));
    assert.equal(p.fallbacks(), 1, "a new worker scored the next task");
  });

  test("a full queue: the tasks beyond it are scored inline at once", async () => {
    const p = pool({ threads: 1, timeoutMs: 60_000 });
    const t = task(gbt(100), offers(200));
    await p.score("t1", t); // the thread is up and holds the model and offers
    // One thread holds 16 waiting tasks: of 40 sent at once, the rest cannot wait.
    const results = await Promise.all(Array.from({ length: 40 }, () => p.score("t1", t)));
    for (const scores of results) assert.deepEqual(scores, scoreCandidates(t));
    assert.ok(p.fallbacks() >= 40 - 17, `fallbacks: ${p.fallbacks()}`);
    assert.ok(p.fallbacks() < 40);
  });

  test("SCORING_POOL_THREADS and SCORING_POOL_TIMEOUT_MS are read and validated", () => {
    const config = loadConfig({ SCORING_POOL_THREADS: "3", SCORING_POOL_TIMEOUT_MS: "250" });
    assert.equal(config.scoringPoolThreads, 3);
    assert.equal(config.scoringPoolTimeoutMs, 250);
    assert.equal(loadConfig({}).scoringPoolThreads, null);
    assert.throws(() => loadConfig({ SCORING_POOL_THREADS: "0" }), /SCORING_POOL_THREADS must be a positive integer/);
  });
});

describe("pooled task protocol (src/core/scoring/pooled-task.ts)", () => {
  test("a worker asks for what it does not hold, keeps what it is sent, and packs scores losslessly", () => {
    const cache = createWorkerScoringCache();
    const t = task(gbt(5), offers(3));
    const { models, candidates, ...rest } = t;
    const slim = { ...rest, modelRefs: { gbt: "t1/gbt/v1" }, candidateRefs: Uint32Array.from([11, 12, 13]) };
    assert.deepEqual(scorePooledTask(cache, slim), { missing: { models: ["t1/gbt/v1"], offers: [11, 12, 13] } });
    const first = scorePooledTask(cache, { ...slim, models, offers: { 11: candidates[0], 12: candidates[1], 13: candidates[2] } });
    assert.ok("scores" in first);
    assert.deepEqual(unpackScores(first.scores), scoreCandidates(t));
    const again = scorePooledTask(cache, slim);
    assert.ok("scores" in again);
    assert.deepEqual(unpackScores(again.scores), scoreCandidates(t));
    const explained = scoreCandidates({ ...t, explain: true });
    assert.deepEqual(unpackScores(packScores(explained)), explained);
  });
});
