/** Link functions between probabilities and the raw margins that linear and tree models sum. */

export function sigmoid(margin: number): number {
  return 1 / (1 + Math.exp(-margin));
}

export function logit(probability: number): number {
  return Math.log(probability / (1 - probability));
}
