import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  assignVariant,
  chiSquareSurvival,
  CHAMPION_VARIANT,
  coveringExperiment,
  erfc,
  expectedShares,
  fnv1a32,
  HOLDOUT_VARIANT,
  normalQuantile,
  pooledZTest,
  requiredSampleSize,
  sampleRatioMismatch,
  uplift,
  variantBucket,
  variantModelId,
  variantNames,
  wilsonInterval,
  type ExperimentSplit,
} from "../../src/core/index.js";

/**
 * Reference values printed by `python3 test/reference/experiment_statistics.py` (Python standard
 * library only: math.erfc, statistics.NormalDist, closed-form chi-square tails; SciPy 1.17 agreed
 * where installed). Regenerate with that command and paste the numbers here.
 */
const REF = {
  fnv1a32: {
    "": 2166136261,
    a: 3826002220,
    b: 3876335077,
    foobar: 3214735720,
    "chongo was here!\n": 3566809301,
    "\u00e9": 513665217,
    "na\u00efve-\u5ba2\u6237:42": 3084478860,
    "exp:\ud83d\ude00": 577169863,
    "spring-sale:customer-17": 2154755581,
  } as Record<string, number>,
  fnv1a32Latin1E: 1812687940,
  erfc: {
    "-3.0": 1.9999779095030015,
    "-0.5": 1.5204998778130465,
    "0.0": 1.0,
    "0.001": 0.9988716212090307,
    "0.5": 0.4795001221869535,
    "1.0": 0.15729920705028513,
    "1.3859292911256331": 0.04999579029644087,
    "1.4999": 0.03390674833770473,
    "1.5": 0.033894853524689274,
    "2.0": 0.004677734981047265,
    "2.5": 0.0004069520174449589,
    "3.0": 2.2090496998585438e-5,
    "5.0": 1.5374597944280351e-12,
    "10.0": 2.088487583762545e-45,
    "26.0": 5.663192408856143e-296,
  } as Record<string, number>,
  normalQuantile: {
    "1e-10": -6.361340902404056,
    "0.001": -3.090232306167813,
    "0.025": -1.9599639845400538,
    "0.2": -0.8416212335729142,
    "0.5": 0.0,
    "0.8": 0.8416212335729144,
    "0.975": 1.9599639845400536,
    "0.999999": 4.753424308817089,
  } as Record<string, number>,
  chiSquareSurvival: {
    "0.5|1": 0.4795001221869535,
    "3.84|1": 0.05004352124870515,
    "5.99|2": 0.05003662708658628,
    "7.8|3": 0.050331097859853485,
    "20.0|10": 0.029252688076961082,
    "100.0|5": 5.285148360943241e-20,
    "0.1|4": 0.9987908957257497,
    "12.5|7": 0.08526927515826935,
  } as Record<string, number>,
};

/** Relative agreement, so that values far below 1e-9 are checked too. */
function close(actual: number, expected: number, relative: number, what: string) {
  const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
  assert.ok(Math.abs(actual - expected) <= relative * scale, `${what}: ${actual} vs ${expected}`);
}

describe("FNV-1a 32 of UTF-8 bytes (the assignment hash)", () => {
  for (const [text, expected] of Object.entries(REF.fnv1a32)) {
    test(JSON.stringify(text), () => assert.equal(fnv1a32(text), expected));
  }
  test("é is hashed as its two UTF-8 bytes, not as one Latin-1 or UTF-16 unit", () => {
    assert.notEqual(fnv1a32("\u00e9"), REF.fnv1a32Latin1E);
  });
  test("the bucket is the hash of <experimentKey>:<customerId> modulo 10000", () => {
    assert.equal(variantBucket("spring-sale", "customer-17"), REF.fnv1a32["spring-sale:customer-17"] % 10_000);
  });
});

describe("distributions to machine precision", () => {
  test("erfc, relative 1e-13 across the series / continued-fraction switch and deep tails", () => {
    for (const [x, expected] of Object.entries(REF.erfc)) close(erfc(Number(x)), expected, 1e-13, `erfc(${x})`);
  });
  test("normal quantile, relative 1e-12", () => {
    for (const [p, expected] of Object.entries(REF.normalQuantile)) {
      if (expected === 0) assert.ok(Math.abs(normalQuantile(Number(p))) < 1e-15);
      else close(normalQuantile(Number(p)), expected, 1e-12, `quantile(${p})`);
    }
  });
  test("chi-square survival, relative 1e-11, odd and even degrees", () => {
    for (const [key, expected] of Object.entries(REF.chiSquareSurvival)) {
      const [x, k] = key.split("|").map(Number);
      close(chiSquareSurvival(x, k), expected, 1e-11, `Q(${x}; ${k})`);
    }
  });
});

describe("experiment statistics against the reference", () => {
  // Reference scenario "three": holdout 120/9, champion 480/52, challenger b 470/71 (see the script).
  const holdout = { samples: 120, conversions: 9 };
  const champion = { samples: 480, conversions: 52 };
  const b = { samples: 470, conversions: 71 };

  test("Wilson intervals at 95% and 90%", () => {
    const w = wilsonInterval(holdout, 0.95);
    close(w.lower, 0.0399571153959603, 1e-9, "lower");
    close(w.upper, 0.13640917605993766, 1e-9, "upper");
    const w90 = wilsonInterval(b, 0.9);
    close(w90.lower, 0.12589492806602876, 1e-9, "lower 90");
    close(w90.upper, 0.18022702344890584, 1e-9, "upper 90");
  });

  test("pooled z-test, two-tailed p and uplift vs holdout", () => {
    const z = pooledZTest(b, holdout)!;
    close(z.zScore, 2.172269299865678, 1e-9, "z");
    close(z.pValue, 0.02983535624105779, 1e-9, "p");
    const u = uplift(b, holdout)!;
    close(u.absolute, 0.07606382978723404, 1e-9, "absolute");
    close(u.relative!, 1.0141843971631206, 1e-9, "relative");
    const vsChampion = pooledZTest(b, champion)!;
    close(vsChampion.zScore, 1.961390097749455, 1e-9, "z vs champion");
    close(vsChampion.pValue, 0.04983353423946338, 1e-9, "p vs champion");
  });

  test("undefined figures are null, not invented", () => {
    assert.equal(pooledZTest(b, { samples: 0, conversions: 0 }), null);
    assert.equal(pooledZTest({ samples: 10, conversions: 0 }, { samples: 10, conversions: 0 }), null);
    assert.equal(uplift(b, { samples: 0, conversions: 0 }), null);
    assert.equal(uplift(b, { samples: 10, conversions: 0 })!.relative, null);
    assert.deepEqual(wilsonInterval({ samples: 0, conversions: 0 }, 0.95), { lower: 0, upper: 1 });
  });

  test("required sample size", () => {
    assert.equal(requiredSampleSize({ baselineRate: 9 / 120, minimumDetectableEffect: 0.1, alpha: 0.05, power: 0.8 }), 20246);
    assert.equal(requiredSampleSize({ baselineRate: 0.2, minimumDetectableEffect: 0.25, alpha: 0.01, power: 0.9 }), 2074);
    assert.equal(requiredSampleSize({ baselineRate: 0, minimumDetectableEffect: 0.1, alpha: 0.05, power: 0.8 }), null);
  });

  test("sample ratio mismatch: three and four variants", () => {
    const three = sampleRatioMismatch([120, 480, 470], [10, 45, 45]);
    close(three.chiSquare, 1.8587746625129804, 1e-9, "chi three");
    close(three.pValue, 0.3947955151631368, 1e-9, "p three");
    assert.equal(three.mismatch, false);
    const four = sampleRatioMismatch([60, 1000, 640, 380], [5, 95 * 0.5, 95 * 0.3, 95 * 0.2]);
    close(four.chiSquare, 23.103913630229428, 1e-9, "chi four");
    close(four.pValue, 3.8418246932724835e-5, 1e-9, "p four");
    assert.equal(four.mismatch, true);
    assert.deepEqual(sampleRatioMismatch([0, 0, 0], [10, 45, 45]), { chiSquare: 0, pValue: 1, mismatch: false });
  });
});

describe("variant assignment", () => {
  const split: ExperimentSplit = {
    id: "e1",
    key: "spring-sale",
    flowId: null,
    championModelId: "m-champion",
    championPct: 50,
    challengers: [
      { modelId: "m-b", key: "b", trafficPct: 30 },
      { modelId: "m-c", trafficPct: 20 },
    ],
    holdoutPercent: 10,
  };

  test("variant names and models: a challenger is named by its key, else by its model id", () => {
    assert.deepEqual(variantNames(split), [HOLDOUT_VARIANT, CHAMPION_VARIANT, "b", "m-c"]);
    assert.equal(variantModelId(split, CHAMPION_VARIANT), "m-champion");
    assert.equal(variantModelId(split, "m-c"), "m-c");
    assert.equal(variantModelId(split, HOLDOUT_VARIANT), null);
    assert.deepEqual(expectedShares(split), [10, 45, 27, 18]);
  });

  test("deterministic, and the population splits as configured (holdout from the whole first)", () => {
    const counts = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const v = assignVariant(split, `customer-${i}`);
      assert.equal(assignVariant(split, `customer-${i}`), v);
      counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const srm = sampleRatioMismatch(variantNames(split).map((v) => counts.get(v) ?? 0), expectedShares(split));
    assert.equal(srm.mismatch, false, `observed ${JSON.stringify([...counts])}`);
    for (const [v, share] of [[HOLDOUT_VARIANT, 0.1], [CHAMPION_VARIANT, 0.45], ["b", 0.27], ["m-c", 0.18]] as const) {
      assert.ok(Math.abs(counts.get(v)! / n - share) < 0.015, `${v}: ${counts.get(v)}`);
    }
  });

  test("the bucket decides: holdout below holdoutPercent·100, then the arms in order", () => {
    // Find customers by bucket and check the boundaries of the configured ranges.
    for (let i = 0; i < 5000; i++) {
      const c = `c${i}`;
      const bucket = variantBucket(split.key, c);
      const position = ((bucket - 1000) * 100) / 9000;
      const expected = bucket < 1000 ? HOLDOUT_VARIANT : position < 50 ? CHAMPION_VARIANT : position < 80 ? "b" : "m-c";
      assert.equal(assignVariant(split, c), expected, c);
    }
  });

  test("coverage: flowId names the flow, else the flow scores with the champion model", () => {
    assert.equal(coveringExperiment([split], "f1", "m-champion")?.id, "e1");
    assert.equal(coveringExperiment([split], "f1", "m-other"), null);
    assert.equal(coveringExperiment([split], "f1", undefined), null);
    const byFlow = { ...split, id: "e2", flowId: "f2", championModelId: "m-x" };
    assert.equal(coveringExperiment([byFlow], "f2", "m-other")?.id, "e2");
    assert.equal(coveringExperiment([byFlow], "f1", "m-x"), null, "a flowId covers only that flow");
    assert.equal(coveringExperiment([split, { ...split, id: "e3" }], "f1", "m-champion")?.id, "e1", "the oldest wins");
  });
});
