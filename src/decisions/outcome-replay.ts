import { createHash } from "node:crypto";
import { toJson } from "@bufbuild/protobuf";
import { RespondRequestSchema, type RespondRequest, type RespondResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import { canonicalJson, setNewest } from "../core/index.js";
import type { Logger } from "../platform/logger.js";
import { answeredRepeatedly } from "../platform/repeated-answers.js";
import { toOutcomeRecord } from "./outcome-mapper.js";
import type { OutcomeRow, OutcomeStore } from "./outcome-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** Records this process wrote or read, kept to answer replays without a query. */
const RECENT_RECORDS = 50_000;

/**
 * Respond's idempotency: a key already recorded answers its first record as `already_recorded`,
 * without attribution, learning or counters. A replay is memory or one indexed read.
 */
export class OutcomeReplay {
  /**
   * A stored record never changes (one per key, by the unique index), so a replay this process
   * has seen is answered from memory. Each entry is valid only under the tenant snapshot it was
   * kept with: a workspace reset (which deletes the records) replaces the snapshot in every
   * process, and with it every entry of the tenant.
   */
  private readonly recent = new Map<string, Recent>();

  constructor(
    private readonly store: Pick<OutcomeStore, "byKey">,
    private readonly logger: Logger,
  ) {}

  /**
   * The answer to a replay of `idempotencyKey`, or null when the key was never recorded. `payload`
   * is the replay's canonicalPayload, to tell one that differs from the record.
   */
  async find(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): Promise<RespondResponse | null> {
    const recalled = this.recall(tenantId, idempotencyKey, payload, under);
    if (recalled) return recalled;
    const earlier = await this.store.byKey(tenantId, idempotencyKey);
    return earlier ? this.replay(this.remember(tenantId, idempotencyKey, earlier, under), payload) : null;
  }

  /** Like `find`, from this process's recent records only: null means "not known here", not "never recorded". */
  recall(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): RespondResponse | null {
    const known = this.recent.get(recentKey(tenantId, idempotencyKey));
    return known?.under === under ? this.replay(known, payload) : null;
  }

  /** Lost the race to a concurrent call with the same key: that call's record stands. */
  async replayWinner(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): Promise<RespondResponse> {
    return this.replay(this.remember(tenantId, idempotencyKey, (await this.store.byKey(tenantId, idempotencyKey))!, under), payload);
  }

  /**
   * Keeps a record this process wrote or read, for the replays that follow; `payload` is the
   * canonicalPayload of the request that wrote it, when this process has it.
   */
  remember(tenantId: string, idempotencyKey: string, row: OutcomeRow, under: CompiledTenant, payload: string | null = null): Recent {
    const kept: Recent = { row, under, payload, answer: null };
    setNewest(this.recent, recentKey(tenantId, idempotencyKey), kept, RECENT_RECORDS);
    return kept;
  }

  private replay(earlier: Recent, payload: string): RespondResponse {
    const { row } = earlier;
    // The text itself where this process has it: hashing it was most of a replay's own CPU.
    const same = earlier.payload !== null ? earlier.payload === payload : row.payload_hash === hashPayload(payload);
    if (same) earlier.payload ??= payload;
    else {
      this.logger.warn({ idempotencyKey: row.idempotency_key, recordId: row.id }, "idempotency key replayed with a different payload; the original record stands");
    }
    // Every replay of a key gets the same answer, so it is built (and by the gRPC door encoded) once.
    return (earlier.answer ??= answeredRepeatedly(toOutcomeRecord(row, "already_recorded")));
  }
}

interface Recent {
  row: OutcomeRow;
  under: CompiledTenant;
  /** The canonicalPayload of the request that wrote the record, once known. */
  payload: string | null;
  /** The `already_recorded` answer, once a replay asked for it. */
  answer: RespondResponse | null;
}

const recentKey = (tenantId: string, idempotencyKey: string) => `${tenantId} ${idempotencyKey}`;

/**
 * The request as its sender wrote it (unset fields omitted) in canonical JSON (RFC 8785: keys in
 * code-unit order), for spotting a replay that differs. canonicalJson writes JSON values exactly as
 * the `canonicalize` package did before it, so stored hashes and derived bulk keys stay the same (tested).
 */
export function canonicalPayload(req: RespondRequest): string {
  return canonicalJson(toJson(RespondRequestSchema, req));
}

/** The stored payload_hash: SHA-256 (hex) of canonicalPayload. */
export function hashPayload(payload: string): string {
  return createHash("sha256").update(payload).digest("hex");
}

/**
 * Bulk items without a key get one derived from their own fields only (never from what the server
 * fills in, such as a defaulted timestamp), so a retried batch replays instead of duplicating.
 */
export function defaultIdempotencyKey(item: RespondRequest): string {
  return `bulk:${hashPayload(canonicalPayload(item))}`;
}
