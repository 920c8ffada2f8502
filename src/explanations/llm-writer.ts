/**
 * A narrative writer over any OpenAI-compatible chat-completions endpoint (LLM_BASE_URL, LLM_MODEL,
 * LLM_API_KEY). The model is given the audience's brief and the narrative facts as JSON, and is told
 * to use nothing else; the facts hold no customer id and only the attribute values the top factors
 * name (narrative-facts.ts). The API key travels only in the Authorization header: it is never
 * logged, and failures are reported by status, never with a body that might echo the request.
 */
import type { LlmConfig } from "../config.js";
import type { NarrativeFacts } from "./narrative-facts.js";
import { AUDIENCE_BRIEFS, type NarrativeMode, type NarrativeWriter } from "./narrative-writer.js";

/** A chat completion that takes longer is abandoned, and the deterministic writer answers instead. */
const LLM_TIMEOUT_MS = 30_000;
const MAX_NARRATIVE_CHARS = 20_000;

const RULES =
  "You explain one automated next-best-action decision. Use only the facts in the user's JSON message; " +
  "do not invent reasons, numbers, offers or attributes, and do not speculate about the customer. " +
  "Answer with the explanation text only.";

/** Why the endpoint gave no narrative; the message is safe to return (no body, no key). */
export class LlmWriterError extends Error {}

export function createLlmWriter(config: LlmConfig): NarrativeWriter {
  return {
    identity: {
      kind: "llm",
      model: config.model,
      label: `Written by the language model ${config.model} from the recorded decision trace's facts only`,
    },
    write: (facts: NarrativeFacts, mode: NarrativeMode) =>
      chatCompletion(config, [
        { role: "system", content: `${RULES}\n${AUDIENCE_BRIEFS[mode]}` },
        { role: "user", content: JSON.stringify(facts) },
      ]),
  };
}

/**
 * One chat completion at temperature 0: the text of the first choice, trimmed and bounded. Shared
 * by the decision narratives and the report narratives (report-narrative-writer.ts).
 */
export async function chatCompletion(config: LlmConfig, messages: Array<{ role: "system" | "user"; content: string }>): Promise<string> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
  let res: Response;
  try {
    res = await fetch(`${config.baseUrl}/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: config.model, temperature: 0, messages }),
      signal: AbortSignal.timeout(LLM_TIMEOUT_MS),
    });
  } catch (err) {
    throw new LlmWriterError((err as Error).name === "TimeoutError" ? "the LLM endpoint did not answer in time" : "the LLM endpoint could not be reached");
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new LlmWriterError(`the LLM endpoint answered HTTP ${res.status}`);
  }
  const body = (await res.json().catch(() => null)) as { choices?: Array<{ message?: { content?: unknown } }> } | null;
  const content = body?.choices?.[0]?.message?.content;
  if (typeof content !== "string" || content.trim() === "") throw new LlmWriterError("the LLM endpoint answered without a message");
  return content.trim().slice(0, MAX_NARRATIVE_CHARS);
}
