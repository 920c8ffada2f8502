#!/usr/bin/env python3
"""Independent reference values for the experiment statistics (src/core/distributions.ts,
src/core/experiment-statistics.ts), checked to 1e-9 by test/unit/core-experiment-statistics.test.ts
and test/integration/experiments-results.test.ts.

Only the Python standard library: math.erfc, statistics.NormalDist (Wichura's AS 241 quantile), and
the closed forms of the chi-square survival function for whole degrees of freedom, so the reference
shares no code and no algorithm with the TypeScript (series and continued fractions). When SciPy
happens to be installed, its values are compared too, as a third opinion.

Regenerate:  python3 test/reference/experiment_statistics.py > /tmp/reference.json
and paste the printed values into the tests. npm test does not run this script.
"""
import json
import math
from statistics import NormalDist

N = NormalDist()


def fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def chi2_sf(x, k):
    """P(X > x), X ~ chi-square(k), k a whole number: closed forms (Abramowitz-Stegun 26.4.4, 26.4.5)."""
    if x <= 0:
        return 1.0
    if k % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, k // 2):
            term *= (x / 2) / i
            total += term
        return math.exp(-x / 2) * total
    s = math.sqrt(x)
    tail = 2 * (1 - N.cdf(s)) if s < 5 else math.erfc(s / math.sqrt(2))
    density = math.exp(-x / 2) / math.sqrt(2 * math.pi)
    term, total = s, 0.0
    for i in range(1, (k - 1) // 2 + 1):
        total += term
        term *= x / (2 * i + 1)
    return tail + 2 * density * total


def z_two_sided(cl):
    return N.inv_cdf(1 - (1 - cl) / 2)


def wilson(conv, n, cl):
    z = z_two_sided(cl)
    p = conv / n
    z2n = z * z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return center - half, center + half


def pooled_z(c1, n1, c0, n0):
    pooled = (c1 + c0) / (n1 + n0)
    z = (c1 / n1 - c0 / n0) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
    return z, math.erfc(abs(z) / math.sqrt(2))


def sample_size(p1, mde, alpha, power):
    p2 = p1 * (1 + mde)
    za = N.inv_cdf(1 - alpha / 2)
    zb = N.inv_cdf(power)
    mean = (p1 + p2) / 2
    num = za * math.sqrt(2 * mean * (1 - mean)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(num * num / ((p2 - p1) ** 2))


def srm(observed, shares):
    total = sum(observed)
    share_total = sum(shares)
    chi = sum((o - total * s / share_total) ** 2 / (total * s / share_total) for o, s in zip(observed, shares))
    return chi, chi2_sf(chi, len(observed) - 1)


def variants(counts, cl):
    """counts: [(name, samples, conversions)], the holdout first."""
    _, n0, c0 = counts[0]
    out = []
    for i, (name, n, c) in enumerate(counts):
        lo, hi = wilson(c, n, cl)
        row = {"variant": name, "samples": n, "conversions": c, "rate": c / n, "wilsonLower": lo, "wilsonUpper": hi}
        if i > 0:
            z, p = pooled_z(c, n, c0, n0)
            absolute = c / n - c0 / n0
            row.update({"absoluteUplift": absolute, "relativeUplift": absolute / (c0 / n0), "zScore": z, "pValue": p, "significant": p < 1 - cl})
        out.append(row)
    return out


# The tests' scenarios. Shares are of the whole population: holdout, then the rest by championPct/trafficPct.
THREE = [("__holdout__", 120, 9), ("__champion__", 480, 52), ("b", 470, 71)]
THREE_SHARES = [10, 90 * 0.5, 90 * 0.5]
FOUR = [("__holdout__", 60, 3), ("__champion__", 1000, 100), ("b", 640, 80), ("c", 380, 30)]
FOUR_SHARES = [5, 95 * 0.5, 95 * 0.3, 95 * 0.2]

FNV_TEXTS = ["", "a", "b", "foobar", "chongo was here!\n", "é", "naïve-客户:42", "exp:\U0001F600", "spring-sale:customer-17"]

reference = {
    # 32-bit FNV-1a of the UTF-8 bytes; "", "a", "foobar" and "chongo was here!\n" are in the FNV authors' test suite.
    "fnv1a32": {t: fnv1a32(t.encode("utf-8")) for t in FNV_TEXTS},
    # The same texts hashed as UTF-16 code units' low bytes would be wrong; this value shows the difference for "é".
    "fnv1a32Latin1E": fnv1a32(bytes([0xE9])),
    "erfc": {repr(x): math.erfc(x) for x in [-3.0, -0.5, 0.0, 1e-3, 0.5, 1.0, 1.3859292911256331, 1.4999, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0, 26.0]},
    "normalQuantile": {repr(p): N.inv_cdf(p) for p in [1e-10, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999999]},
    "chiSquareSurvival": {f"{x}|{k}": chi2_sf(x, k) for x, k in [(0.5, 1), (3.84, 1), (5.99, 2), (7.8, 3), (20.0, 10), (100.0, 5), (0.1, 4), (12.5, 7)]},
    "three": {
        "variants": variants(THREE, 0.95),
        "variants90": variants(THREE, 0.90),
        "srm": dict(zip(["chiSquare", "pValue"], srm([n for _, n, _ in THREE], THREE_SHARES))),
        "requiredSampleSize": sample_size(9 / 120, 0.1, 0.05, 0.8),
        # ?mde=0.25&alpha=0.01&power=0.9
        "requiredSampleSizeCustom": sample_size(9 / 120, 0.25, 0.01, 0.9),
        "challengerVsChampion": dict(zip(["zScore", "pValue"], pooled_z(71, 470, 52, 480))),
    },
    "four": {
        "variants": variants(FOUR, 0.95),
        "srm": dict(zip(["chiSquare", "pValue"], srm([n for _, n, _ in FOUR], FOUR_SHARES))),
        "requiredSampleSize": sample_size(0.2, 0.25, 0.01, 0.9),
    },
}

try:  # a third opinion, when SciPy is installed; never required
    from scipy import stats, special

    for key, value in reference["chiSquareSurvival"].items():
        x, k = key.split("|")
        assert abs(stats.chi2.sf(float(x), int(k)) - value) < 1e-12, key
    for key, value in reference["erfc"].items():
        assert abs(special.erfc(float(key)) - value) < 1e-15, key
except ImportError:
    pass

print(json.dumps(reference, indent=2))
