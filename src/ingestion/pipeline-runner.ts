import { setTimeout as sleep } from "node:timers/promises";
import type { Sequelize } from "sequelize";
import { errorHandlingOf, type PipelineIr, type SourceNode } from "../core/index.js";
import { unavailable } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { newId } from "../platform/ids.js";
import type { HealthAlerts } from "../observability/operational-signals.js";
import { movedKey } from "./object-source.js";
import { describeStorageError, type BucketAccess, type ObjectInfo, type ObjectStore, type ObjectStoreOptions } from "./object-store.js";
import type { ExpiredRun, PipelineRow, PipelineStore } from "./pipeline-store.js";
import { describeFailure, RunAttempt, RunFailure, stoppedBy } from "./run-attempt.js";
import { RunLease } from "../platform/run-lease.js";
import { settledWithin } from "../platform/settled-within.js";
import type { SchemaRow } from "./schema-store.js";

/** One node's line of a run's answer (spec 4.20). */
export interface NodeOutcome {
  id: string;
  kind: string;
  rowsOut?: number;
  rowsLoaded?: number;
  meta: Record<string, unknown>;
}

export interface RunResult {
  runId: string;
  irVersion: number;
  ok: boolean;
  nodeResults: NodeOutcome[];
  failedNodeId: string | null;
  error: string | null;
}

/** One customer's decision for the decide node: ranked offers, or why there are none. */
export interface BatchDecision {
  customerId: string;
  recommendationId: string;
  offers: Array<{ offerId: string; rank: number; score: number }>;
}

/** The decisions' batch entry point, as the runner sees it (docs/ingestion.md, "decide"). */
export interface BatchDecider {
  decideBatch(tenantId: string, flowId: string, limit: number, customers: Array<{ customerId: string; attributes: Record<string, unknown> }>): Promise<BatchDecision[]>;
}

export interface RunnerDeps {
  db: Sequelize;
  store: PipelineStore;
  /** The tenant's schemas (for target tables and fields). */
  schemas(tenantId: string): Promise<SchemaRow[]>;
  /** A connector's bucket access, or null when the tenant has no such connector. */
  access(tenantId: string, connectorId: string): Promise<BucketAccess | null>;
  objectStore: ObjectStoreOptions;
  healthAlerts: HealthAlerts;
  decider: BatchDecider | null;
  /** Customer schemas changed: the decisions' customer cache drops the tenant's entries. */
  customersLoaded(tenantId: string): Promise<void>;
  /** How long a run's lease holds without renewal; renewed every third of it. */
  leaseMs: number;
  logger: Logger;
}

/** The error of a run that a stop of the service interrupted. */
export const SHUTDOWN_ERROR = "stopped: the service shut down";
/** The error of a run whose process stopped before it finished: the sweep records it. */
export const LEASE_EXPIRED_ERROR = "the process running it stopped before it finished (lease expired)";

/**
 * Runs a pipeline's IR (spec 4.20; docs/ingestion.md, "The runner"). Files are streamed: records
 * pass node by node to each target's COPY into its staging table, and only after every file was
 * read and every dataset rule held does each target apply its load mode, in its own transaction.
 * Retries follow errorHandling; the run, its node results and its dead letter are recorded.
 *
 * A run holds a lease that it renews while it goes on, so that a run whose process died is found
 * and finished as failed by the sweep (`finishExpired`), through the same recording as any failed
 * run. `stop` aborts the runs in flight, so that a shutdown does not wait for them and records them
 * while the database is still there.
 */
export class PipelineRunner {
  private readonly shutdown = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly deps: RunnerDeps) {}

  /** `stop` aborts the run as a stop does (the scheduler's, when the run's slot was taken over). */
  async run(pipeline: PipelineRow, ir: PipelineIr, irVersion: number, trigger: "manual" | "schedule", stop?: AbortSignal): Promise<RunResult> {
    if (this.shutdown.signal.aborted) throw unavailable("SHUTTING_DOWN", "the service is stopping: run the pipeline again once it is back");
    const running = this.runTracked(pipeline, ir, irVersion, trigger, stop);
    this.inFlight.add(running);
    const untrack = () => this.inFlight.delete(running);
    void running.then(untrack, untrack);
    return running;
  }

  /**
   * Aborts the runs in flight and waits, at most `graceMs`, until each has been recorded as failed.
   * Later runs are refused. Reading stops at once, and the COPY or load statement under way is
   * cancelled and rolled back; a COMMIT the server has already carried out stays.
   */
  async stop(graceMs: number): Promise<void> {
    if (!this.shutdown.signal.aborted) this.shutdown.abort(new Error(SHUTDOWN_ERROR));
    if (!this.inFlight.size) return;
    if (!(await settledWithin(Promise.allSettled([...this.inFlight]), graceMs))) this.deps.logger.warn({ runs: this.inFlight.size, graceMs }, "ingestion runs still going after the stop's grace");
  }

  private async runTracked(pipeline: PipelineRow, ir: PipelineIr, irVersion: number, trigger: "manual" | "schedule", stop?: AbortSignal): Promise<RunResult> {
    const runId = newId();
    const { store, logger, leaseMs } = this.deps;
    const tenantId = pipeline.tenant_id;
    await store.startRun(tenantId, { id: runId, pipeline_id: pipeline.id, ir_version: irVersion, trigger }, leaseMs);
    const lease = new RunLease({ renew: () => store.renewLease(tenantId, runId, leaseMs), leaseMs, logger, kind: "ingestion run", runId });
    const signal = AbortSignal.any([this.shutdown.signal, lease.lost, ...(stop ? [stop] : [])]);
    const eh = ir.errorHandling;
    let attempt = 0;
    let result: Omit<RunResult, "runId" | "irVersion">;
    let files: ObjectInfo[] = [];
    let storeHandle: { store: ObjectStore; node: SourceNode; access: BucketAccess } | null = null;
    try {
      for (;;) {
        attempt++;
        const run = new RunAttempt(this.deps, pipeline, ir, runId, signal);
        try {
          result = await run.execute();
        } catch (err) {
          const failure = err instanceof RunFailure ? err : new RunFailure(run.current, describeFailure(err), false);
          if (!(err instanceof RunFailure)) logger.warn({ err, pipelineId: pipeline.id, runId, attempt }, "pipeline run attempt failed");
          result = { ok: false, nodeResults: run.outcomes(), failedNodeId: failure.nodeId, error: failure.message };
          if (!failure.final && attempt < eh.maxAttempts && !signal.aborted) {
            run.close();
            const delay = eh.backoff === "none" ? 0 : eh.backoff === "fixed" ? eh.initialDelayMs : eh.initialDelayMs * 2 ** (attempt - 1);
            logger.info({ pipelineId: pipeline.id, runId, attempt, delay }, "pipeline run retrying");
            // A stop during the backoff ends the run with the last attempt's node results.
            if (await sleep(delay, true, { signal }).catch(() => false)) continue;
            result = { ...result, error: stoppedBy(signal) };
          }
        }
        files = result.ok ? run.loadedFiles : run.selectedFiles.filter((f) => !run.movedAside.has(f.key));
        storeHandle = run.source;
        break;
      }
      try {
        // A stopped run's files stay where they are: nothing was wrong with them, and the next run reads them.
        if (storeHandle?.node.atomicity && !signal.aborted) await this.settleFiles(storeHandle, files, result.ok, result);
      } finally {
        storeHandle?.store.close();
      }
      const recorded = await this.record(pipeline, runId, result, attempt, eh.dlq);
      if (!recorded) logger.warn({ pipelineId: pipeline.id, runId, ok: result.ok }, "pipeline run had been finished as failed by the lease sweep; its own outcome is not recorded");
      logger.info({ pipelineId: pipeline.id, runId, ok: result.ok, attempts: attempt, failedNodeId: result.failedNodeId }, "pipeline run finished");
      return { runId, irVersion, ...result };
    } finally {
      await lease.stop();
    }
  }

  /**
   * Finishes, as failed, a run the sweep claimed because its lease ran out: its process stopped
   * before it finished. Recorded as the runner records any failure (dead letter when its IR version
   * asked for one, the pipeline's failed health alert). False when there was nothing to finish
   * (its pipeline was deleted, or the run had been finished meanwhile).
   */
  async finishExpired(run: ExpiredRun): Promise<boolean> {
    const { store } = this.deps;
    const pipeline = await store.find(run.tenant_id, run.pipeline_id);
    if (!pipeline) return false;
    const version = await store.version(run.tenant_id, run.pipeline_id, run.ir_version);
    const dlq = version ? errorHandlingOf(version.ir).dlq : false;
    const recorded = await this.record(pipeline, run.id, { ok: false, nodeResults: run.node_results, failedNodeId: null, error: LEASE_EXPIRED_ERROR }, run.attempts, dlq);
    if (recorded) this.deps.logger.warn({ tenantId: run.tenant_id, pipelineId: run.pipeline_id, runId: run.id }, "ingestion run whose process stopped finished as failed");
    return recorded;
  }

  /** A run's outcome, its dead letter and its health alerts, once per run whoever finishes it. */
  private async record(pipeline: PipelineRow, runId: string, result: Omit<RunResult, "runId" | "irVersion">, attempts: number, dlq: boolean): Promise<boolean> {
    const recorded = await this.deps.store.finishRun(pipeline.tenant_id, runId, {
      ok: result.ok,
      node_results: result.nodeResults,
      failed_node_id: result.failedNodeId,
      error: result.error,
      attempts,
      dead_lettered: !result.ok && dlq,
    });
    if (recorded) await this.reportHealth(pipeline, runId, result);
    return recorded;
  }

  /** atomicity: loaded files go to the success folder (its date token filled in), the rest of a failed run's to the failure folder. */
  private async settleFiles(h: { store: ObjectStore; node: SourceNode; access: BucketAccess }, files: ObjectInfo[], ok: boolean, result: Omit<RunResult, "runId" | "irVersion">) {
    const a = h.node.atomicity!;
    const at = new Date();
    const moved: string[] = [];
    for (const f of files) {
      const dest = movedKey(h.access.prefix, h.node, f.key, ok ? a.successFolder : a.failureFolder, at);
      try {
        await h.store.move(f.key, dest);
        moved.push(dest);
      } catch (err) {
        this.deps.logger.warn({ err: describeStorageError(err), key: f.key }, "pipeline could not move a file after its run");
      }
    }
    const source = result.nodeResults.find((n) => n.id === h.node.id);
    if (source) source.meta = { ...source.meta, movedTo: moved };
  }

  /** A deleted pipeline's alerts: no later run of it can clear them. */
  async clearHealth(tenantId: string, pipelineId: string): Promise<void> {
    const { noFiles, failed } = healthKeys(pipelineId);
    try {
      await this.deps.healthAlerts.clear(tenantId, noFiles);
      await this.deps.healthAlerts.clear(tenantId, failed);
    } catch (err) {
      this.deps.logger.warn({ err, pipelineId }, "deleted pipeline's health alerts not resolved");
    }
  }

  /** Spec 4.20 and 6: a warning when the source had no files, an error for a failed run; both clear on success. */
  private async reportHealth(pipeline: PipelineRow, runId: string, result: Omit<RunResult, "runId" | "irVersion">) {
    const { healthAlerts, logger } = this.deps;
    const { noFiles, failed } = healthKeys(pipeline.id);
    const source = result.nodeResults.find((n) => n.kind === "source");
    const empty = source?.meta.files !== undefined && (source.meta.files as unknown[]).length === 0;
    try {
      if (empty) {
        await healthAlerts.raise(pipeline.tenant_id, { key: noFiles, severity: "warning", message: `pipeline ${pipeline.name}: the source found no files`, details: { pipelineId: pipeline.id, runId } });
      } else await healthAlerts.clear(pipeline.tenant_id, noFiles);
      if (!result.ok) {
        await healthAlerts.raise(pipeline.tenant_id, {
          key: failed,
          severity: "error",
          message: `pipeline ${pipeline.name} failed${result.failedNodeId ? ` at node ${result.failedNodeId}` : ""}: ${result.error}`.slice(0, 1000),
          details: { pipelineId: pipeline.id, runId, failedNodeId: result.failedNodeId },
        });
      } else await healthAlerts.clear(pipeline.tenant_id, failed);
    } catch (err) {
      logger.warn({ err, pipelineId: pipeline.id }, "pipeline health alert not recorded");
    }
  }
}

function healthKeys(pipelineId: string) {
  return { noFiles: `pipeline:${pipelineId}:no_files`, failed: `pipeline:${pipelineId}:failed` };
}
