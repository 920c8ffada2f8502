/**
 * The writer used when no language model is configured, and when the configured one fails: fixed
 * templates over the narrative facts, so the same trace and mode always give the same text. The
 * response labels it as such (spec 4.11: the response says which writer produced it).
 */
import type { NarrativeFacts } from "./narrative-facts.js";
import type { NarrativeMode, NarrativeWriter, WriterIdentity } from "./narrative-writer.js";

/** Bumped when the templates change, so cached texts of the old templates are not served. */
export const DETERMINISTIC_WRITER: WriterIdentity = {
  kind: "deterministic",
  model: "deterministic-v1",
  label: "Written by fixed templates from the recorded decision trace, without a language model",
};

/** How a customer would understand why an offer left at each stage (spec 2.16 stages). */
const STAGE_WORDS: Record<string, string> = {
  eligibility: "eligibility rules",
  contact_policy: "contact limits",
  consent: "consent preferences",
  channel: "availability on this channel",
  suppression: "recent responses",
  frequency_cap: "limits on how often an offer is shown",
  maturity_ramp: "a gradual roll-out of new offers",
  guardrail: "business guardrails",
  coupling: "no suitable content for the placement",
  rank: "other offers ranking higher",
};

export function createDeterministicWriter(): NarrativeWriter {
  return {
    identity: DETERMINISTIC_WRITER,
    write: async (facts, mode) => TEMPLATES[mode](facts),
  };
}

const TEMPLATES: Record<NarrativeMode, (f: NarrativeFacts) => string> = { customer, marketer, regulator };

const offerLabel = (o: { offerName: string | null; offerId: string }) => o.offerName ?? o.offerId;
const signed = (n: number) => (n >= 0 ? `+${n}` : String(n));
const factorText = (f: { field: string; contribution: number }) => `${f.field} (${signed(f.contribution)})`;
/** `offer.priority` → "the offer's priority", `customer.monthlySpend` → "your monthly spend", `tier=gold` → "your tier (gold)". */
function plainFactor(field: string): string {
  const [path, value] = field.split("=");
  const segments = path.split(".");
  const root = segments.length > 1 ? segments[0] : "customer";
  const words = segments.at(-1)!.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_-]+/g, " ").toLowerCase();
  const owner = root === "offer" ? "the offer's" : root === "context" ? "the visit's" : "your";
  return `${owner} ${words}${value !== undefined ? ` (${value})` : ""}`;
}

const joinWords = (items: string[]) => (items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`);

function customer(f: NarrativeFacts): string {
  if (!f.selectedOffers.length) return "No offer was recommended this time: none of the available offers met the conditions for this visit.";
  const first = f.selectedOffers[0];
  const sentences = [`We recommended ${joinWords(f.selectedOffers.map(offerLabel))}.`];
  const factors = f.scoring.find((s) => s.offerId === first.offerId)?.topFactors ?? [];
  const helped = factors.filter((x) => x.contribution > 0).map((x) => plainFactor(x.field));
  if (helped.length) sentences.push(`${offerLabel(first)} was chosen mainly because of ${joinWords(helped)}.`);
  const reasons = f.stages.rejections.filter((r) => r.stage !== "rank").map((r) => STAGE_WORDS[r.stage] ?? r.stage);
  if (reasons.length) sentences.push(`Some other offers were not shown because of ${joinWords(reasons)}.`);
  return sentences.join(" ");
}

function marketer(f: NarrativeFacts): string {
  const { eligibility, contactPolicy, rejections } = f.stages;
  const parts = [
    `Decision ${f.decision.recommendationId}${f.decision.decidedAt ? ` at ${f.decision.decidedAt}` : ""}${f.decision.flowId ? ` on flow ${f.decision.flowId}` : ""}.`,
    `${eligibility.evaluated} offers were checked for eligibility: ${eligibility.passed} passed, ${eligibility.failed} failed` +
      `${eligibility.skipped ? `, ${eligibility.skipped} rule checks skipped for missing data` : ""}.`,
    `Contact policy blocked ${contactPolicy.blocked} of ${contactPolicy.evaluated} checks; ${f.candidatesScored} offers were scored.`,
  ];
  if (f.selectedOffers.length) {
    parts.push(`Selected: ${f.selectedOffers.map((o) => `#${o.rank} ${offerLabel(o)}${o.score !== null ? ` (score ${o.score})` : ""}`).join(", ")}.`);
  } else {
    parts.push("No offer was selected.");
  }
  for (const s of f.scoring.filter((s) => f.selectedOffers.some((o) => o.offerId === s.offerId))) {
    if (s.topFactors.length) parts.push(`Top factors for ${offerLabel(s)}: ${s.topFactors.map(factorText).join(", ")}.`);
  }
  if (rejections.length) {
    parts.push(
      `Rejected by stage: ${rejections
        .map((r) => `${r.stage} ${r.count}${r.examples[0]?.reason ? ` (e.g. ${r.examples[0].offerName ?? "an offer"}: ${r.examples[0].reason})` : ""}`)
        .join("; ")}.`,
    );
  }
  if (f.decision.degradedScoring) parts.push("Scoring was degraded: a model was unavailable and fallback scores were used.");
  if (f.decision.experimentVariant) parts.push(`Experiment variant: ${f.decision.experimentVariant}.`);
  return parts.join(" ");
}

function regulator(f: NarrativeFacts): string {
  const d = f.decision;
  const lines = [
    `Decision record ${d.recommendationId} (trace ${d.traceId})${d.decidedAt ? `, decided at ${d.decidedAt}` : ""}.`,
    `Configuration version ${d.policyVersionHash || "not recorded"}; inputs hash ${d.inputsHash || "not recorded"}; flow ${d.flowId ?? "default"}.`,
  ];
  const models = [...new Set(f.scoring.map((s) => `${s.modelId ?? "unknown"} (${s.modelType ?? "unknown type"})`))];
  lines.push(`Scoring model: ${models.length ? models.join(", ") : "none recorded"}; ${f.candidatesScored} offers scored.`);
  const e = f.stages.eligibility;
  lines.push(`Eligibility: ${e.evaluated} offers evaluated, ${e.passed} passed, ${e.failed} failed, ${e.skipped} rule checks skipped for missing data.`);
  lines.push(`Contact policy: ${f.stages.contactPolicy.evaluated} checks, ${f.stages.contactPolicy.blocked} blocked.`);
  for (const r of f.stages.rejections) {
    const examples = r.examples.map((x) => `${x.offerName ?? "offer"}: ${x.reason ?? "no reason recorded"}`).join("; ");
    lines.push(`Rejected at stage ${r.stage}: ${r.count}${examples ? ` (${examples})` : ""}.`);
  }
  if (f.selectedOffers.length) {
    for (const o of f.selectedOffers) {
      const s = f.scoring.find((x) => x.offerId === o.offerId);
      const factors = s?.topFactors.length ? `; largest factor contributions: ${s.topFactors.map(factorText).join(", ")}` : "";
      lines.push(`Selected at rank ${o.rank}: ${offerLabel(o)} (${o.offerId}), score ${o.score ?? "not recorded"}${factors}.`);
    }
  } else {
    lines.push("No offer was selected.");
  }
  const values = Object.entries(f.factorValues);
  if (values.length) lines.push(`Attribute values behind those factors: ${values.map(([k, v]) => `${k} = ${String(v)}`).join(", ")}.`);
  lines.push(
    d.degradedScoring
      ? "Scoring was degraded: at least one model was unavailable or failed, and the fallback score was used."
      : "Scoring was not degraded.",
  );
  if (d.experimentVariant) lines.push(`Experiment variant: ${d.experimentVariant}.`);
  lines.push("This account was generated deterministically from the recorded decision trace; it contains no model-written text.");
  return lines.join("\n");
}
