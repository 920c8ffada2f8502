/**
 * The few distribution functions experiment results need, to double precision: the complementary
 * error function, the standard normal CDF, its inverse, and the chi-square survival function. The
 * core imports no packages, and the results must agree with an independent reference to 1e-9
 * (test/reference/experiment_statistics.py), so the usual 1e-7 textbook approximations
 * (Abramowitz-Stegun 7.1.26) are not enough: each function here is a convergent series or
 * continued fraction run to machine precision.
 */

const SQRT_PI = Math.sqrt(Math.PI);
const EPSILON = 1e-17;
const MAX_TERMS = 500;
/** Below this the series for erf is exact enough (erfc(1.5) ≈ 0.034, so 1 − erf loses under two digits); above, the continued fraction converges within a few hundred terms. */
const ERFC_SWITCH = 1.5;

/**
 * erfc(x) = 1 - erf(x), without cancellation in the tail. For |x| < 1.5 the all-positive series
 * erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1)); beyond, the continued fraction
 * erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))) by the modified Lentz method.
 */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x < 0) return 2 - erfc(-x);
  if (x < ERFC_SWITCH) return 1 - erfSeries(x);
  if (x > 27) return 0;
  return erfcContinuedFraction(x);
}

function erfSeries(x: number): number {
  const x2 = x * x;
  let term = x;
  let sum = x;
  for (let n = 1; n < MAX_TERMS; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
    if (term < sum * EPSILON) break;
  }
  return ((2 / SQRT_PI) * Math.exp(-x2) * sum);
}

function erfcContinuedFraction(x: number): number {
  // erfc(x)·√π·e^(x²) = 1/(x + a1/(x + a2/(x + …))) with a_k = k/2.
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let k = 1; k < MAX_TERMS; k++) {
    const a = k / 2;
    d = x + a * d;
    d = Math.abs(d) < tiny ? tiny : d;
    c = x + a / c;
    c = Math.abs(c) < tiny ? tiny : c;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return Math.exp(-x * x) / (SQRT_PI * f);
}

/** P(Z <= z) for a standard normal Z. */
export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

/** P(Z > z): computed from the upper tail directly, so it keeps its precision for large z. */
export function normalSurvival(z: number): number {
  return 0.5 * erfc(z / Math.SQRT2);
}

function normalDensity(z: number): number {
  return Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
}

/**
 * The z with P(Z <= z) = p. A rational first guess (Abramowitz-Stegun 26.2.23, error < 4.5e-4)
 * refined by Newton steps on the tail probability, which converge quadratically to machine
 * precision within a few steps.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    return Number.NaN;
  }
  // Work in the upper tail q = P(Z > z) of the positive root, then mirror.
  const upper = p > 0.5;
  const q = upper ? 1 - p : p;
  const t = Math.sqrt(-2 * Math.log(q));
  let z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
  for (let i = 0; i < 8; i++) {
    const step = (normalSurvival(z) - q) / normalDensity(z);
    z += step;
    if (Math.abs(step) < 1e-15 * Math.max(1, Math.abs(z))) break;
  }
  return upper ? z : -z;
}

const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(a) for a > 0 (Lanczos, g = 7, n = 9: about 15 significant digits). */
export function logGamma(a: number): number {
  if (a < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * a)) - logGamma(1 - a);
  const x = a - 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i] / (x + i);
  const t = x + LANCZOS_G + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(sum);
}

/**
 * The regularized upper incomplete gamma function Q(a, x) = Γ(a, x)/Γ(a): by the series for
 * P(a, x) when x < a + 1, otherwise by the Legendre continued fraction (modified Lentz), each where
 * it converges fast and without cancellation (Numerical Recipes 6.2).
 */
export function upperRegularizedGamma(a: number, x: number): number {
  if (!(a > 0) || x < 0 || Number.isNaN(x)) return Number.NaN;
  if (x === 0) return 1;
  if (x === Infinity) return 0;
  const logPrefix = a * Math.log(x) - x - logGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < MAX_TERMS; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
    }
    return 1 - sum * Math.exp(logPrefix);
  }
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_TERMS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    d = Math.abs(d) < tiny ? tiny : d;
    c = b + an / c;
    c = Math.abs(c) < tiny ? tiny : c;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return Math.exp(logPrefix) * h;
}

/** P(X > x) for X chi-square distributed with `degrees` degrees of freedom. */
export function chiSquareSurvival(x: number, degrees: number): number {
  if (x <= 0) return 1;
  return upperRegularizedGamma(degrees / 2, x / 2);
}
