import { setTimeout as sleep } from "node:timers/promises";
import {
  columnValue,
  evaluateExpression,
  ExpressionError,
  type DecideNode,
  type IrNode,
  type PipelineIr,
  type SchemaField,
  type SourceNode,
  type TargetNode,
  type ValidateNode,
} from "../core/index.js";
import { isAppError } from "../platform/errors.js";
import { decoded, digest, expectedHashes, movedKey, readRecords, selectFiles, sourceFolder } from "./object-source.js";
import { describeStorageError, openObjectStore, type BucketAccess, type ObjectInfo, type ObjectStore } from "./object-store.js";
import type { NodeOutcome, RunnerDeps, RunResult } from "./pipeline-runner.js";
import type { PipelineRow } from "./pipeline-store.js";
import { QuarantineWriter } from "./quarantine-writer.js";
import { cdcOperation, TableLoader } from "./table-loader.js";

/** A failure attributed to a node. `final` failures (bad data, refused integrity) are not retried. */
export class RunFailure extends Error {
  constructor(
    readonly nodeId: string,
    message: string,
    readonly final = true,
  ) {
    super(message);
  }
}

const PROGRESS_EVERY = 100_000;
const DECIDE_BATCH = 100;

type Flow = { line: number; file: string; row: Record<string, unknown> };

/** A failure as the run answer says it: storage errors by their code, database internals withheld. */
export function describeFailure(err: unknown): string {
  if (err instanceof ExpressionError) return err.message;
  const pg = err as { code?: string; message?: string; $metadata?: unknown; name?: string };
  if (pg?.$metadata || pg?.name === "OutboundBlockedError") return describeStorageError(err);
  // Data errors (classes 22 and 23) name the tenant's own values and constraints: worth showing. Others are internals.
  if (typeof pg?.code === "string" && /^[0-9A-Z]{5}$/.test(pg.code)) {
    return /^2[23]/.test(pg.code) ? `database refused the load (${pg.code}): ${String(pg.message).slice(0, 300)}` : `database error (${pg.code})`;
  }
  return (err as Error)?.message?.slice(0, 300) ?? "run failed";
}

/** Why a run was stopped from outside (a shutdown, a lost lease), as the run's error. */
export function stoppedBy(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : "stopped";
}

/**
 * `p`, or a rejection as soon as `signal` aborts: for waits the signal cannot cut itself (a COPY
 * waiting for the socket to drain, a request for an object). `p` is left to settle on its own; its
 * rejection is handled here, so a destroyed stream does not surface as an unhandled rejection.
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/**
 * One attempt of a run: its node state, its loaders, its counters. `signal` stops it from outside
 * (docs/ingestion.md, "What a stop does to a run"): it is checked between batches of records, files
 * and targets, and it cuts the waits in between (the source's body, a COPY's drain, a waitPolicy
 * sleep); the staging loads are then rolled back, and the attempt fails final, not to be retried.
 */
export class RunAttempt {
  current: string;
  loadedFiles: ObjectInfo[] = [];
  selectedFiles: ObjectInfo[] = [];
  /** Files an integrity mismatch already moved to the failure folder. */
  movedAside = new Set<string>();
  source: { store: ObjectStore; node: SourceNode; access: BucketAccess } | null = null;
  private readonly byId: Map<string, IrNode>;
  private readonly children = new Map<string, IrNode[]>();
  private readonly results = new Map<string, NodeOutcome>();
  private readonly loaders = new Map<string, { loader: TableLoader; node: TargetNode; fields: SchemaField[]; keys: string[] }>();
  private quarantine: QuarantineWriter | null = null;
  private quarantineNode: ValidateNode | null = null;
  private readonly decideBuffers = new Map<string, Flow[]>();
  private rowsRead = 0;

  constructor(
    private readonly deps: RunnerDeps,
    private readonly pipeline: PipelineRow,
    private readonly ir: PipelineIr,
    private readonly runId: string,
    private readonly signal: AbortSignal,
  ) {
    this.byId = new Map(ir.nodes.map((n) => [n.id, n]));
    for (const n of ir.nodes) {
      if (n.kind !== "source") this.children.set(n.input, [...(this.children.get(n.input) ?? []), n]);
      this.results.set(n.id, { id: n.id, kind: n.kind, meta: {}, ...(n.kind === "target" ? { rowsLoaded: 0 } : { rowsOut: 0 }) });
    }
    this.current = ir.nodes.find((n) => n.kind === "source")!.id;
  }

  outcomes(): NodeOutcome[] {
    return this.ir.order.map((id) => this.results.get(id)!);
  }

  close(): void {
    this.source?.store.close();
    this.source = null;
  }

  async execute(): Promise<Omit<RunResult, "runId" | "irVersion">> {
    const tenantId = this.pipeline.tenant_id;
    const node = this.ir.nodes.find((n): n is SourceNode => n.kind === "source")!;
    try {
      this.checkSignal();
      await this.prepareTargets();
      const q = this.ir.nodes.find((n): n is ValidateNode => n.kind === "validate" && n.quarantine !== null);
      if (q) {
        this.quarantineNode = q;
        this.quarantine = new QuarantineWriter(this.deps.db, tenantId, q.quarantine!.table.toLowerCase(), this.runId, this.pipeline.id);
        await this.quarantine.ensureTable();
      }
      this.current = node.id;
      const access = node.connector ? await this.deps.access(tenantId, node.connector) : null;
      if (!access) throw new RunFailure(node.id, "the source's connector no longer exists");
      this.checkSignal();
      const store = await openObjectStore(access, this.deps.objectStore);
      this.source = { store, node, access };
      const folder = sourceFolder(access.prefix, node);
      const files = await this.listWithWait(store, folder, node);
      const meta = this.results.get(node.id)!.meta;
      meta.files = files.map((f) => f.key);
      this.selectedFiles = files;
      if (files.length === 0 && node.waitPolicy?.onMissAction === "fail") throw new RunFailure(node.id, `no file matched under ${folder} after ${node.waitPolicy.maxRetries} retries`);
      const expected = node.integrity ? await expectedHashes(store, folder, node, files) : null;
      for (const file of files) {
        this.current = node.id;
        this.checkSignal();
        if (expected && !(await this.verify(store, node, file, expected.get(file.key)!))) continue;
        await this.readFile(store, node, file);
        this.loadedFiles.push(file);
      }
      await this.flushDecides();
      await this.checkDataset();
      return await this.applyTargets();
    } catch (err) {
      for (const { loader } of this.loaders.values()) await loader.abort();
      // Whatever a stop surfaced as (a destroyed stream, an aborted sleep), the run was stopped.
      if (this.signal.aborted) throw new RunFailure(this.current, stoppedBy(this.signal));
      throw err;
    } finally {
      await this.quarantine?.flush().catch((err) => this.deps.logger.warn({ err }, "quarantine rows not written"));
      const q = this.quarantineNode && this.results.get(this.quarantineNode.id);
      if (q && this.quarantine) q.meta = { ...q.meta, quarantined: this.quarantine.count, quarantineTable: this.quarantine.table };
    }
  }

  /** waitPolicy: lists again every intervalMinutes until a file appears or maxRetries are spent. */
  private async listWithWait(store: ObjectStore, folder: string, node: SourceNode): Promise<ObjectInfo[]> {
    for (let attempt = 0; ; attempt++) {
      const files = selectFiles(await untilAborted(store.list(folder), this.signal), folder, node);
      if (files.length || !node.waitPolicy || attempt >= node.waitPolicy.maxRetries) return files;
      await sleep(node.waitPolicy.intervalMinutes * 60_000, undefined, { signal: this.signal });
    }
  }

  /** integrity: true to load the file; a mismatch with `fail` throws, with `skip` moves it aside and skips it. */
  private async verify(store: ObjectStore, node: SourceNode, file: ObjectInfo, expected: string[]): Promise<boolean> {
    const g = node.integrity!;
    const actual = await untilAborted(digest(await untilAborted(store.read(file.key), this.signal), g.algorithm), this.signal);
    const meta = this.results.get(node.id)!.meta;
    if (expected.every((e) => e === actual)) {
      meta.verified = [...((meta.verified as string[]) ?? []), file.key];
      return true;
    }
    const what = `${g.algorithm} of ${file.key} does not match its ${expected.some((e) => !e) ? "sidecar or manifest (missing)" : "sidecar or manifest"}`;
    if (g.onMismatch === "warn") {
      meta.warnings = [...((meta.warnings as string[]) ?? []), what];
      return true;
    }
    if (node.atomicity) {
      await store.move(file.key, movedKey(this.source!.access.prefix, node, file.key, node.atomicity.failureFolder, new Date()));
      this.movedAside.add(file.key);
    }
    if (g.onMismatch === "fail") throw new RunFailure(node.id, `integrity: ${what}`);
    meta.skipped = [...((meta.skipped as string[]) ?? []), file.key];
    return false;
  }

  private async readFile(store: ObjectStore, node: SourceNode, file: ObjectInfo): Promise<void> {
    const out = this.results.get(node.id)!;
    const name = file.key;
    const log = this.deps.logger;
    const body = await untilAborted(store.read(file.key), this.signal);
    const input = decoded(body, file.key, node);
    // Cuts a read that waits on the network. The parser reads `input`, which is not the body when
    // gunzipped (pipe does not pass a destroy on), so both are destroyed.
    const cut = () => {
      input.destroy(this.signal.reason as Error);
      body.destroy(this.signal.reason as Error);
    };
    this.signal.addEventListener("abort", cut, { once: true });
    try {
      for await (const batch of readRecords(input, node)) {
        this.checkSignal();
        for (const rec of batch) {
          if (++this.rowsRead % PROGRESS_EVERY === 0) log.info({ pipelineId: this.pipeline.id, runId: this.runId, file: name, rows: this.rowsRead }, "pipeline run progress");
          const flow = { line: rec.line, file: name, row: rec.row };
          const p = rec.error !== null ? this.rowError(node.id, flow, rec.error) : (out.rowsOut!++, this.emit(node.id, flow));
          if (p) await untilAborted(p, this.signal);
        }
      }
    } finally {
      this.signal.removeEventListener("abort", cut);
    }
    // A body cut by the signal may read as an early end rather than an error.
    this.checkSignal();
  }

  private checkSignal(): void {
    if (this.signal.aborted) throw new RunFailure(this.current, stoppedBy(this.signal));
  }

  /** Passes a row to every node that reads `from`. Synchronous unless a stream needs to drain. */
  private emit(from: string, flow: Flow): Promise<void> | undefined {
    const kids = this.children.get(from);
    if (!kids) return undefined;
    let pending: Promise<void>[] | null = null;
    for (const kid of kids) {
      const p = this.accept(kid, kids.length > 1 ? { ...flow, row: { ...flow.row } } : flow);
      if (p) (pending ??= []).push(p);
    }
    return pending ? Promise.all(pending).then(() => undefined) : undefined;
  }

  private accept(node: IrNode, flow: Flow): Promise<void> | undefined {
    const out = this.results.get(node.id)!;
    switch (node.kind) {
      case "transform": {
        const row = flow.row;
        for (const op of node.ops) {
          if (op.type === "rename") {
            if (op.from in row) {
              row[op.to] = row[op.from];
              delete row[op.from];
            }
          } else {
            try {
              row[op.outputField] = evaluateExpression(op.expr, row);
            } catch (err) {
              return this.rowError(node.id, flow, `${op.outputField}: ${(err as Error).message}`);
            }
          }
        }
        out.rowsOut!++;
        return this.emit(node.id, flow);
      }
      case "validate": {
        for (const rule of node.rowLevel) {
          const v = flow.row[rule.field];
          const empty = v === undefined || v === null || v === "";
          const failed = rule.type === "notNull" ? empty : !empty && !rule.pattern!.test(String(v));
          if (!failed) continue;
          const reason = rule.type === "notNull" ? `${rule.field}: is null` : `${rule.field}: does not match ${rule.pattern!.source}`;
          if (rule.onFail === "abort") throw new RunFailure(node.id, `line ${flow.line} of ${flow.file}: ${reason}`);
          out.meta.warnings = ((out.meta.warnings as number) ?? 0) + 1;
          // warn: the row goes to quarantine when there is one, and on with a warning when not.
          if (node.quarantine) return this.quarantine!.add(node.id, flow.file, flow.line, reason, flow.row);
        }
        out.rowsOut!++;
        return this.emit(node.id, flow);
      }
      case "target":
        return this.stage(node, flow);
      case "decide": {
        const buffer = this.decideBuffers.get(node.id) ?? [];
        this.decideBuffers.set(node.id, buffer);
        buffer.push(flow);
        return buffer.length >= DECIDE_BATCH ? this.decide(node, buffer.splice(0)) : undefined;
      }
      default:
        return undefined;
    }
  }

  /** A row one node cannot take: to quarantine when the pipeline has one, else the run fails naming its line. */
  private rowError(nodeId: string, flow: Flow, reason: string): Promise<void> | undefined {
    if (!this.quarantine) throw new RunFailure(nodeId, `line ${flow.line} of ${flow.file}: ${reason}`);
    return this.quarantine.add(nodeId, flow.file, flow.line, reason, flow.row);
  }

  private async prepareTargets(): Promise<void> {
    const tenantId = this.pipeline.tenant_id;
    const schemas = new Map((await this.deps.schemas(tenantId)).map((s) => [s.id, s]));
    for (const n of this.ir.nodes) {
      if (n.kind !== "target") continue;
      this.current = n.id;
      const schema = schemas.get(n.schemaId);
      if (!schema) throw new RunFailure(n.id, "the target's schema no longer exists");
      const keys = n.upsertKey.length ? n.upsertKey : schema.fields.filter((f) => f.isPrimaryKey).map((f) => f.name);
      const loader = new TableLoader(this.deps.db, {
        tenantId,
        pipelineId: this.pipeline.id,
        nodeId: n.id,
        table: schema.table_name,
        fields: schema.fields,
        loadMode: n.loadMode,
        keys,
        watermarkColumn: n.watermarkColumn,
        watermark: this.pipeline.watermarks[n.id] ?? null,
      }, this.signal);
      this.loaders.set(n.id, { loader, node: n, fields: schema.fields, keys });
      this.results.get(n.id)!.meta = { table: schema.table_name, loadMode: n.loadMode };
      await loader.begin();
      if (schema.entity_type === "customer") this.customerTargets = true;
    }
  }

  private customerTargets = false;

  private stage(node: TargetNode, flow: Flow): Promise<void> | undefined {
    const { loader, fields, keys } = this.loaders.get(node.id)!;
    const values: Array<string | null> = new Array(fields.length);
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i];
      const r = columnValue(f, flow.row[f.name]);
      if (!r.ok) return this.rowError(node.id, flow, r.message);
      if (r.value === null && keys.includes(f.name)) return this.rowError(node.id, flow, `${f.name}: a key field is empty`);
      values[i] = r.value;
    }
    let op: string | null = null;
    if (node.loadMode === "cdc_mirror") {
      const raw = flow.row[node.operationColumn];
      // Fail closed: an operation the mirror does not know stops the run before anything is applied.
      if (!cdcOperation(raw)) throw new RunFailure(node.id, `line ${flow.line} of ${flow.file}: unknown operation "${String(raw ?? "").slice(0, 40)}" in ${node.operationColumn}`);
      op = String(raw).trim();
    }
    return loader.write(values, flow.line, op);
  }

  private async decide(node: DecideNode, batch: Flow[]): Promise<void> {
    const out = this.results.get(node.id)!;
    const decider = this.deps.decider;
    if (!decider) throw new RunFailure(node.id, "batch decisions are not available in this process");
    const customers: Array<{ customerId: string; attributes: Record<string, unknown> }> = [];
    for (const flow of batch) {
      const id = flow.row.customerId;
      if (typeof id !== "string" && typeof id !== "number") {
        const p = this.rowError(node.id, flow, "customerId: is required");
        if (p) await p;
        continue;
      }
      const { customerId: _, ...attributes } = flow.row;
      customers.push({ customerId: String(id), attributes });
    }
    if (!customers.length) return;
    this.checkSignal();
    const decisions = await decider.decideBatch(this.pipeline.tenant_id, node.flowId, node.limit, customers).catch((err: unknown) => {
      // A refusal of the decision core (an exhausted quota, an unknown flow) would be refused again: not retried.
      if (isAppError(err)) throw new RunFailure(node.id, `${err.reason}: ${err.message}`);
      throw err;
    });
    out.meta.decisions = ((out.meta.decisions as number) ?? 0) + decisions.length;
    for (const d of decisions) {
      for (const o of d.offers) {
        out.rowsOut!++;
        const p = this.emit(node.id, { line: 0, file: "decide", row: { customerId: d.customerId, offerId: o.offerId, rank: o.rank, score: o.score, recommendationId: d.recommendationId } });
        if (p) await p;
      }
    }
  }

  private async flushDecides(): Promise<void> {
    for (const [id, buffer] of this.decideBuffers) {
      this.current = id;
      if (buffer.length) await this.decide(this.byId.get(id) as DecideNode, buffer.splice(0));
    }
  }

  /** Dataset rules and the empty-source rule, checked before anything is applied. */
  private async checkDataset(): Promise<void> {
    for (const n of this.ir.nodes) {
      if (n.kind !== "validate" || !n.rowCount) continue;
      const count = this.results.get(n.id)!.rowsOut!;
      const { min, max, onFail } = n.rowCount;
      if ((min !== null && count < min) || (max !== null && count > max)) {
        const what = `rowCount ${count} is outside [${min ?? 0}, ${max ?? "∞"}]`;
        if (onFail === "abort") throw new RunFailure(n.id, what);
        const out = this.results.get(n.id)!;
        out.meta.datasetWarnings = [...((out.meta.datasetWarnings as string[]) ?? []), what];
      }
    }
    for (const { loader, node } of this.loaders.values()) {
      this.current = node.id;
      this.checkSignal();
      await loader.endCopy();
      if (loader.stagedRows === 0 && node.failOnEmptySource && (node.loadMode === "truncate" || node.loadMode === "blue_green")) {
        throw new RunFailure(node.id, `empty source: ${node.loadMode} refused before replacing the table (failOnEmptySource)`);
      }
    }
  }

  private async applyTargets(): Promise<Omit<RunResult, "runId" | "irVersion">> {
    for (const { loader, node } of this.loaders.values()) {
      this.current = node.id;
      this.checkSignal();
      const r = await loader.apply();
      const out = this.results.get(node.id)!;
      out.rowsLoaded = r.rowsLoaded;
      out.meta = { ...out.meta, ...r.meta };
    }
    if (this.customerTargets) {
      await this.deps.customersLoaded(this.pipeline.tenant_id).catch((err) => this.deps.logger.warn({ err, pipelineId: this.pipeline.id }, "customer cache invalidation not published"));
    }
    return { ok: true, nodeResults: this.outcomes(), failedNodeId: null, error: null };
  }
}
