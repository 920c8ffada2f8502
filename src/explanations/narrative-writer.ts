/**
 * Who writes a narrative: an OpenAI-compatible chat-completions endpoint when one is configured
 * (llm-writer.ts), otherwise fixed templates over the same facts (deterministic-writer.ts). The
 * writer's identity is part of the response and of the cache key, so a cached text always says
 * truthfully what produced it.
 */
import type { NarrativeFacts } from "./narrative-facts.js";

/** The audiences of spec 4.11 (which names `regulator`): docs/explanations.md. */
export const NARRATIVE_MODES = ["customer", "marketer", "regulator"] as const;
export type NarrativeMode = (typeof NARRATIVE_MODES)[number];
export const DEFAULT_NARRATIVE_MODE: NarrativeMode = "marketer";

export interface WriterIdentity {
  kind: "llm" | "deterministic";
  /** LLM_MODEL, or the template version: the "model" of the cache key. */
  model: string;
  label: string;
}

export interface NarrativeWriter {
  readonly identity: WriterIdentity;
  write(facts: NarrativeFacts, mode: NarrativeMode): Promise<string>;
}

/** What each audience needs; the LLM's instructions and the templates follow the same brief. */
export const AUDIENCE_BRIEFS: Record<NarrativeMode, string> = {
  customer:
    "Write for the customer who received the recommendation: two to four short, plain sentences, no jargon, " +
    "no internal ids, scores as words rather than numbers. Say what was recommended and the main reasons.",
  marketer:
    "Write for the marketer who configured the decision: a short paragraph on the funnel (how many offers were " +
    "considered, what each stage removed and why), which offers won, their scores and the factors that drove them.",
  regulator:
    "Write for a regulator or auditor: a formal, complete and neutral account that names the decision, trace, " +
    "configuration version and inputs hash, the model and its type, every stage's counts and reasons, degraded " +
    "scoring if any, and the factors behind each selected offer, with their numeric contributions. State nothing " +
    "that is not in the facts.",
};
