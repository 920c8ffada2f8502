/**
 * The narrative of a report (spec 2.9): the same two writers as decision narratives (an
 * OpenAI-compatible endpoint when LLM_BASE_URL and LLM_MODEL are set, otherwise fixed templates),
 * fed only the report's computed sections and the template's prompt. The result names its writer.
 */
import type { LlmConfig } from "../config.js";
import type { Logger } from "../platform/logger.js";
import type { ReportNarrative, ReportSection } from "../reports/report-document.js";
import { chatCompletion } from "./llm-writer.js";

export interface ReportNarrativeInput {
  title: string;
  /** The template's `narrative.prompt`: what the reader wants the narrative to attend to. */
  prompt: string;
  sections: readonly ReportSection[];
}

export interface ReportNarrativeWriter {
  write(input: ReportNarrativeInput): Promise<ReportNarrative>;
}

/** The LLM sees at most this many rows per section: enough to summarize, bounded in tokens. */
const MAX_ROWS_FOR_LLM = 50;
const NUMERIC = new Set(["integer", "number", "percent", "currency"]);

const RULES =
  "You write the narrative of a business report about an automated next-best-action decision engine. " +
  "Use only the numbers in the user's JSON message; do not invent figures, offers or causes. Answer with JSON only: " +
  '{"executiveSummary": string, "sectionNarratives": [{"sectionId": string, "narrative": string}], "keyTakeaways": [string]}.';

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100));

/** Fixed templates: for each section its row count, its first numeric column's total and its leading row. */
export function deterministicReportNarrative(input: ReportNarrativeInput): ReportNarrative {
  const sectionNarratives = input.sections.map((s) => {
    const at = s.columns.findIndex((c) => NUMERIC.has(c.type));
    if (!s.rows.length) return { sectionId: s.id, narrative: `${s.title}: no data in this period.` };
    if (at < 0) return { sectionId: s.id, narrative: `${s.title}: ${s.rows.length} rows.` };
    const column = s.columns[at];
    const values = s.rows.map((r) => (typeof r[at] === "number" ? (r[at] as number) : 0));
    const top = values.indexOf(Math.max(...values));
    const total = column.type === "percent" ? null : values.reduce((a, b) => a + b, 0);
    return {
      sectionId: s.id,
      narrative:
        `${s.title}: ${s.rows.length} rows.` +
        (total !== null ? ` ${column.name} totals ${fmt(total)}.` : "") +
        ` The highest ${column.name} is ${fmt(values[top])} (${String(s.rows[top][0] ?? "")}).`,
    };
  });
  return {
    executiveSummary: `${input.title} covers ${input.sections.length} section${input.sections.length === 1 ? "" : "s"}: ${input.sections.map((s) => s.title).join(", ")}.`,
    sectionNarratives,
    keyTakeaways: sectionNarratives.filter((n) => !n.narrative.endsWith("no data in this period.")).map((n) => n.narrative.split(". ").slice(-1)[0]),
    writer: "deterministic",
  };
}

function parseLlmNarrative(text: string, sectionIds: readonly string[], writer: string): ReportNarrative | null {
  const json = text.replace(/^```(?:json)?\s*|\s*```$/g, "");
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  const v = value as { executiveSummary?: unknown; sectionNarratives?: unknown; keyTakeaways?: unknown };
  if (typeof v.executiveSummary !== "string" || !Array.isArray(v.sectionNarratives) || !Array.isArray(v.keyTakeaways)) return null;
  return {
    executiveSummary: v.executiveSummary,
    sectionNarratives: v.sectionNarratives
      .filter((n): n is { sectionId: string; narrative: string } => typeof n?.sectionId === "string" && typeof n?.narrative === "string" && sectionIds.includes(n.sectionId))
      .map((n) => ({ sectionId: n.sectionId, narrative: n.narrative })),
    keyTakeaways: v.keyTakeaways.filter((t): t is string => typeof t === "string"),
    writer,
  };
}

/** The LLM writer when configured, falling back to the templates (and saying so) when it fails. */
export function createReportNarrativeWriter(llm: LlmConfig | null, logger: Logger): ReportNarrativeWriter {
  return {
    async write(input) {
      if (!llm) return deterministicReportNarrative(input);
      const facts = {
        title: input.title,
        sections: input.sections.map((s) => ({ sectionId: s.id, title: s.title, columns: s.columns, rows: s.rows.slice(0, MAX_ROWS_FOR_LLM), totalRows: s.rows.length })),
      };
      try {
        const text = await chatCompletion(llm, [
          { role: "system", content: input.prompt ? `${RULES}\nThe reader asks: ${input.prompt}` : RULES },
          { role: "user", content: JSON.stringify(facts) },
        ]);
        const parsed = parseLlmNarrative(text, input.sections.map((s) => s.id), llm.model);
        if (parsed) return parsed;
        logger.warn({ model: llm.model }, "report narrative: the LLM answer was not the requested JSON; deterministic writer used");
      } catch (err) {
        logger.warn({ model: llm.model, err: (err as Error).message }, "report narrative: the LLM failed; deterministic writer used");
      }
      return deterministicReportNarrative(input);
    },
  };
}
