/**
 * Beta distributions for the adaptive model. Sampling draws Beta(a, b) as X / (X + Y) with
 * X ~ Gamma(a), Y ~ Gamma(b), each by Marsaglia and Tsang's squeeze method (2000), boosted for
 * shapes below 1 by Gamma(a) = Gamma(a + 1) · U^(1/a). Normals come from Box–Muller. All randomness
 * comes from the passed-in generator, so a seed replays a sample exactly.
 */
import type { Random } from "../random.js";

export function betaMean(alpha: number, beta: number): number {
  return alpha / (alpha + beta);
}

export function sampleBeta(alpha: number, beta: number, random: Random): number {
  const x = sampleGamma(alpha, random);
  const y = sampleGamma(beta, random);
  return x / (x + y);
}

export function sampleGamma(shape: number, random: Random): number {
  if (!(shape > 0)) throw new Error(`gamma shape must be positive, got ${shape}`);
  if (shape < 1) return sampleGamma(shape + 1, random) * Math.pow(uniformOpen(random), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = sampleNormal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = uniformOpen(random);
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

function sampleNormal(random: Random): number {
  return Math.sqrt(-2 * Math.log(uniformOpen(random))) * Math.cos(2 * Math.PI * random());
}

/** Uniform in (0, 1): logarithms and roots must never see 0. */
function uniformOpen(random: Random): number {
  let u = random();
  while (u === 0) u = random();
  return u;
}
