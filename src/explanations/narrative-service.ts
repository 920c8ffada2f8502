import { createHash } from "node:crypto";
import type { Sequelize } from "sequelize";
import type { DecisionNarrative, NarrateDecisionRequest } from "../../gen/decisioning/v1/explanations_pb.js";
import type { TenantContext } from "../platform/context.js";
import { pgErrorCode } from "../platform/db.js";
import { invalidField, notFound } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { createDeterministicWriter } from "./deterministic-writer.js";
import type { ExplanationAccess } from "./explanation-access.js";
import type { ExplanationAudit } from "./explanation-audit.js";
import { toDecisionNarrative, traceJson, type NarrativeResult } from "./explanation-mapper.js";
import { LlmWriterError } from "./llm-writer.js";
import { narrativeFacts, type NarrativeFacts } from "./narrative-facts.js";
import type { NarrativeKey, NarrativeStore } from "./narrative-store.js";
import { DEFAULT_NARRATIVE_MODE, NARRATIVE_MODES, type NarrativeMode, type NarrativeWriter, type WriterIdentity } from "./narrative-writer.js";

export interface NarrativeDeps {
  db: Sequelize;
  access: ExplanationAccess;
  audit: ExplanationAudit;
  store: NarrativeStore;
  /** The configured writer: the LLM writer, or the deterministic one when no LLM is configured. */
  writer: NarrativeWriter;
  logger: Logger;
}

/**
 * `POST /decisions/{id}/narrative` (spec 4.11): a written explanation of a decision for an audience,
 * from the trace's facts only, cached 7 days per tenant, trace, mode, writer model and inputs hash
 * (`noCache` writes afresh and replaces the cached text). Regulator mode appends an audit entry on
 * every answer, cached or not. When the LLM fails, the deterministic writer answers, says so, and
 * its text is not cached under the LLM's key.
 */
export class NarrativeService {
  private readonly fallback = createDeterministicWriter();

  constructor(private readonly deps: NarrativeDeps) {}

  async narrateDecision(ctx: TenantContext, req: NarrateDecisionRequest): Promise<DecisionNarrative> {
    const { access, store, writer } = this.deps;
    await access.requireOptIn(ctx);
    const mode = narrativeMode(req.mode);
    const { trace } = await access.trace(ctx, req.id);
    const key: NarrativeKey = { traceId: trace.id, mode, writerModel: writer.identity.model, inputsHash: trace.inputsHash };

    const hit = req.noCache ? null : await store.find(ctx.tenantId, key);
    if (hit) {
      const result: NarrativeResult = {
        trace, mode, narrative: hit.narrative, writer: hit.writer, fallbackReason: null, cached: true,
        facts: hit.facts, generatedAt: hit.generated_at, expiresAt: hit.expires_at,
      };
      if (mode === "regulator") await this.deps.audit.record(ctx, trace.id, auditChanges(result));
      return toDecisionNarrative(result);
    }

    const facts = narrativeFacts(traceJson(trace));
    const written = await this.write(facts, mode);
    const result: NarrativeResult = { trace, mode, ...written, cached: false, facts, generatedAt: new Date(), expiresAt: null };
    if (written.fallbackReason !== null) {
      // Not cached: the key names the LLM's model, and the next request should try the LLM again.
      if (mode === "regulator") await this.deps.audit.record(ctx, trace.id, auditChanges(result));
      return toDecisionNarrative(result);
    }
    try {
      result.expiresAt = await tenantWriteTransaction(this.deps.db, ctx.tenantId, async (t) => {
        if (mode === "regulator") await this.deps.audit.record(ctx, trace.id, auditChanges(result), t);
        return store.save(t, ctx.tenantId, key, { narrative: result.narrative, writer: result.writer, facts: facts as unknown as Record<string, unknown>, generated_at: result.generatedAt });
      });
    } catch (err) {
      // The trace went (a workspace reset) between reading it and caching its narrative.
      if (pgErrorCode(err) === "23503") throw notFound("decision trace", req.id);
      throw err;
    }
    return toDecisionNarrative(result);
  }

  /** The configured writer, or the deterministic one with the reason when the LLM fails. */
  private async write(facts: NarrativeFacts, mode: NarrativeMode): Promise<{ narrative: string; writer: WriterIdentity; fallbackReason: string | null }> {
    const { writer, logger } = this.deps;
    try {
      return { narrative: await writer.write(facts, mode), writer: writer.identity, fallbackReason: null };
    } catch (err) {
      if (!(err instanceof LlmWriterError)) throw err;
      logger.warn({ reason: err.message, model: writer.identity.model }, "LLM narrative failed; the deterministic writer answered");
      return { narrative: await this.fallback.write(facts, mode), writer: this.fallback.identity, fallbackReason: err.message };
    }
  }
}

function narrativeMode(raw: string): NarrativeMode {
  if (raw === "") return DEFAULT_NARRATIVE_MODE;
  if (!(NARRATIVE_MODES as readonly string[]).includes(raw)) throw invalidField("mode", `must be one of ${NARRATIVE_MODES.join(", ")}`);
  return raw as NarrativeMode;
}

/** Ids and a hash of the text, which a regulator can match against the text they were given. */
function auditChanges(r: NarrativeResult): Record<string, unknown> {
  return {
    explanation: "narrative",
    mode: r.mode,
    writer: r.writer.kind,
    writerModel: r.writer.model,
    cached: r.cached,
    ...(r.fallbackReason !== null && { fallbackReason: r.fallbackReason }),
    narrativeSha256: createHash("sha256").update(r.narrative).digest("hex"),
    inputsHash: r.trace.inputsHash,
  };
}
