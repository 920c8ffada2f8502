import { createHash } from "node:crypto";
import { fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { RespondRequestSchema, RespondResponseSchema, type RespondRequest, type RespondResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import { canonicalJson } from "../core/index.js";
import type { Bus } from "../platform/bus.js";
import type { Logger } from "../platform/logger.js";
import { objectNumbers } from "../platform/object-numbers.js";
import { encodedAs } from "../platform/repeated-answers.js";
import { toOutcomeRecord } from "./outcome-mapper.js";
import type { OutcomeRow, OutcomeStore } from "./outcome-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/**
 * How much of the heap the records this process wrote may take, kept to answer replays without a
 * query: a bench-sized record takes about 1.2 KB, so about 75,000 of them, at 4,500 fresh keys a
 * second (one process, docs/performance.md) the last 16 seconds. A budget of bytes, not a count:
 * a Respond may carry a large context.
 */
export const RECENT_WRITES_BYTES = 90 * 1024 * 1024;
/** The same for records read back from PostgreSQL for a replay, kept apart so that a run of old keys cannot push out what this process just wrote. */
export const RECENT_READS_BYTES = 12 * 1024 * 1024;
/** What an entry takes beyond the text it holds twice (the request and the answer's context): the key, the ids and the objects. */
const ENTRY_BYTES = 800;
/**
 * How long after an erasure's message a customer's records are not kept: a Respond recorded, or a
 * read started, before the erasure deleted its row may come back after the message. The erasure's
 * verification rounds take about a second.
 */
const ERASED_HOLD_MS = 60_000;
/** Records of a bench-sized request (about 190 characters) that RECENT_WRITES_BYTES holds: what the bench compares its fresh lane with. */
export const RECENT_WRITES = Math.floor(RECENT_WRITES_BYTES / (ENTRY_BYTES + 2 * 190));

/**
 * Bus channel: a customer was erased (spec 4.13's GDPR erasure), `<tenantId>|<customerId>`; every
 * process forgets its kept records of the customer before the erasure answers.
 */
export const ERASED_CUSTOMER_CHANNEL = "decisioning.customer.erased";

/**
 * Respond's idempotency: a key already recorded answers its first record as `already_recorded`,
 * without attribution, learning or counters. A replay is memory or one indexed read.
 */
export class OutcomeReplay {
  /**
   * A stored record never changes (one per key, by the unique index), so a replay this process
   * has seen is answered from memory. Each entry is valid only under the tenant snapshot it was
   * kept with: a workspace reset (which deletes the records) replaces the snapshot in every
   * process, and with it every entry of the tenant. Both maps drop their oldest entries first;
   * with one map, replays of more keys than it holds, in the order they were written, each read
   * back the key that the next one needed and evicted it (every replay went to PostgreSQL).
   */
  private readonly written: Kept;
  private readonly read: Kept;
  /** `<tenantId>|<customerId>` of customers erased lately → until when their records are not kept. */
  private readonly erased = new Map<string, number>();

  constructor(
    private readonly store: Pick<OutcomeStore, "byKey">,
    private readonly logger: Logger,
    budgets: { writtenBytes?: number; readBytes?: number } = {},
  ) {
    this.written = new Kept(budgets.writtenBytes ?? RECENT_WRITES_BYTES);
    this.read = new Kept(budgets.readBytes ?? RECENT_READS_BYTES);
  }

  /** Subscribes to erasures: an erased customer's records must not be answered from memory. */
  async listen(bus: Bus): Promise<void> {
    await bus.subscribe(ERASED_CUSTOMER_CHANNEL, (message) => {
      const at = message.indexOf("|");
      this.forgetCustomer(message.slice(0, at), message.slice(at + 1));
    });
  }

  /** Drops the customer's records, and keeps none of theirs for a while: a scan of every kept record, which an erasure (rare) can afford. */
  forgetCustomer(tenantId: string, customerId: string): void {
    const now = Date.now();
    for (const [erased, until] of this.erased) if (until <= now) this.erased.delete(erased);
    this.erased.set(`${tenantId}|${customerId}`, now + ERASED_HOLD_MS);
    const prefix = recentKey(tenantId, "");
    for (const kept of [this.written, this.read]) kept.dropWhere((key, entry) => entry.customerId === customerId && key.startsWith(prefix));
  }

  /**
   * The answer to a replay of `idempotencyKey`, or null when the key was never recorded. `payload`
   * is the replay's canonicalPayload, to tell one that differs from the record.
   */
  async find(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): Promise<RespondResponse | null> {
    const recalled = this.recall(tenantId, idempotencyKey, payload, under);
    if (recalled) return recalled;
    const earlier = await this.store.byKey(tenantId, idempotencyKey);
    return earlier ? this.replay(this.keepRead(tenantId, idempotencyKey, earlier, under), payload) : null;
  }

  /** Like `find`, from this process's recent records only: null means "not known here", not "never recorded". */
  recall(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): RespondResponse | null {
    const key = recentKey(tenantId, idempotencyKey);
    const known = this.written.get(key) ?? this.read.get(key);
    return known?.generation === generationOf(under) ? this.replay(known, payload) : null;
  }

  /** Lost the race to a concurrent call with the same key: that call's record stands. */
  async replayWinner(tenantId: string, idempotencyKey: string, payload: string, under: CompiledTenant): Promise<RespondResponse> {
    const winner = (await this.store.byKey(tenantId, idempotencyKey))!;
    return this.replay(this.keepRead(tenantId, idempotencyKey, winner, under), payload);
  }

  /**
   * Keeps a record this process wrote, as the answer it gave (`recorded`), with the
   * canonicalPayload of the request that wrote it, for the replays that follow. Kept as it is:
   * encoding the replay's answer here cost a fresh Respond about 5% of its CPU.
   */
  remember(tenantId: string, idempotencyKey: string, answer: RespondResponse, under: CompiledTenant, payload: string): void {
    if (this.heldBack(tenantId, answer.customerId)) return;
    const entry: Recent = { generation: generationOf(under), customerId: answer.customerId, payload, hashed: false, answered: answer, bytes: null, size: ENTRY_BYTES + 2 * payload.length };
    this.written.set(recentKey(tenantId, idempotencyKey), entry);
  }

  /**
   * A record read back from PostgreSQL. An entry this process wrote under an older snapshot (any
   * configuration change replaces it) goes: it would hide this one from `recall`, and every replay
   * of the key would read the database again.
   */
  private keepRead(tenantId: string, idempotencyKey: string, row: OutcomeRow, under: CompiledTenant): Recent {
    const key = recentKey(tenantId, idempotencyKey);
    this.written.delete(key);
    // The request's text is not known here: the stored context and details stand for it.
    const size = ENTRY_BYTES + 2 * (JSON.stringify(row.context).length + JSON.stringify(row.outcome_details).length);
    const kept: Recent = { generation: generationOf(under), customerId: row.customer_id, payload: row.payload_hash, hashed: true, answered: toOutcomeRecord(row, "already_recorded"), bytes: null, size };
    if (!this.heldBack(tenantId, row.customer_id)) this.read.set(key, kept);
    return kept;
  }

  /** Whether the customer was erased too lately for their records to be kept. */
  private heldBack(tenantId: string, customerId: string): boolean {
    return this.erased.size > 0 && (this.erased.get(`${tenantId}|${customerId}`) ?? 0) > Date.now();
  }

  /**
   * Every replay of a key gets the same answer. The first builds and encodes it and keeps only the
   * bytes (0.9 KB with the rest of the entry); the later ones decode them (about 2 µs), and the
   * gRPC door sends them as they are.
   */
  private replay(earlier: Recent, payload: string): RespondResponse {
    let answer: RespondResponse;
    if (earlier.bytes === null) {
      answer = { ...earlier.answered!, status: "already_recorded" };
      earlier.bytes = Buffer.from(toBinary(RespondResponseSchema, answer));
      earlier.answered = null;
    } else {
      answer = fromBinary(RespondResponseSchema, earlier.bytes);
    }
    encodedAs(answer, earlier.bytes);
    // The text itself where this process has it: hashing it was most of a replay's own CPU.
    if (earlier.hashed ? earlier.payload === hashPayload(payload) : earlier.payload === payload) {
      earlier.payload = payload;
      earlier.hashed = false;
    } else {
      this.logger.warn({ idempotencyKey: answer.idempotencyKey, recordId: answer.id }, "idempotency key replayed with a different payload; the original record stands");
    }
    return answer;
  }
}

interface Recent {
  /** The tenant snapshot it was kept under, by number: holding the snapshot itself would keep every replaced one alive. */
  generation: number;
  /** Whose record it is, for an erasure. */
  customerId: string;
  /** The canonicalPayload of the request that wrote the record, or, until a replay matches it, its stored SHA-256. */
  payload: string;
  hashed: boolean;
  /** The record as first answered, until a replay encodes it. */
  answered: RespondResponse | null;
  /** The `already_recorded` answer, encoded, from the first replay on. */
  bytes: Buffer | null;
  /** What it is counted as against its map's budget: an estimate, from the text it holds. */
  size: number;
}

/** Entries in the order they were kept, the oldest dropped first while the estimated bytes exceed the budget. */
class Kept {
  private readonly entries = new Map<string, Recent>();
  private bytes = 0;

  constructor(private readonly budget: number) {}

  get(key: string): Recent | undefined {
    return this.entries.get(key);
  }

  set(key: string, entry: Recent): void {
    this.delete(key);
    this.entries.set(key, entry);
    this.bytes += entry.size;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(oldest);
      this.bytes -= old.size;
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.size;
  }

  dropWhere(drop: (key: string, entry: Recent) => boolean): void {
    for (const [key, entry] of this.entries) if (drop(key, entry)) this.delete(key);
  }
}

/** Each compiled snapshot's number in this process: a recompiled one is a new object and a new number. */
const generationOf = objectNumbers<CompiledTenant>();

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
