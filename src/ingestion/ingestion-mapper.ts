import { create, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ConnectorSchema,
  DataSchemaSchema,
  NodeResultSchema,
  PipelineIrEnvelopeSchema,
  PipelineRunSchema,
  PipelineSchema,
  SchemaFieldSchema,
  type Connector,
  type DataSchema,
  type NodeResult,
  type Pipeline,
  type PipelineIrEnvelope,
  type PipelineRun,
} from "../../gen/decisioning/v1/ingestion_pb.js";
import type { SchemaField } from "../core/index.js";
import type { ConnectorRow } from "./connector-store.js";
import type { IrVersionRow, PipelineRow, RunRow } from "./pipeline-store.js";
import type { NodeOutcome } from "./pipeline-runner.js";
import type { SchemaRow } from "./schema-store.js";

const some = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/** The public connector: authConfig without its secrets, and which secrets are stored. */
export function toConnector(row: ConnectorRow, secretsSet: string[]): Connector {
  return create(ConnectorSchema, {
    id: row.id,
    name: row.name,
    type: row.type,
    description: row.description,
    config: row.config,
    authMethod: row.auth_method,
    authConfig: { roleArn: row.auth_config.roleArn, accessKeyId: row.auth_config.accessKeyId },
    status: row.status,
    lastError: some(row.last_error),
    lastTestedAt: row.last_tested_at ? timestampFromDate(row.last_tested_at) : undefined,
    secretsSet,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

export function toSchemaField(f: SchemaField) {
  return create(SchemaFieldSchema, {
    name: f.name,
    displayName: f.displayName,
    dataType: f.dataType,
    length: some(f.length),
    precision: some(f.precision),
    scale: some(f.scale),
    isPrimaryKey: f.isPrimaryKey,
    isNullable: f.isNullable,
    isUnique: f.isUnique,
    ordinal: f.ordinal,
  });
}

export function toDataSchema(row: SchemaRow): DataSchema {
  return create(DataSchemaSchema, {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    entityType: row.entity_type,
    tableName: row.table_name,
    fields: row.fields.map(toSchemaField),
    createdAt: timestampFromDate(row.created_at),
  });
}

/** The public pipeline; `ir` is its current version's IR (spec 2.21), null before the first version. */
export function toPipeline(row: PipelineRow, ir: Record<string, unknown> | null): Pipeline {
  return create(PipelineSchema, {
    id: row.id,
    name: row.name,
    description: row.description,
    connectorId: some(row.connector_id),
    schemaId: some(row.schema_id),
    irVersion: row.ir_version,
    status: row.status,
    currentVersion: row.current_version,
    schedule: some(row.schedule),
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    ir: ir === null ? undefined : (ir as JsonObject),
  });
}

export function toIrEnvelope(pipeline: PipelineRow, row: IrVersionRow): PipelineIrEnvelope {
  return create(PipelineIrEnvelopeSchema, {
    pipelineId: pipeline.id,
    version: row.version,
    irVersion: pipeline.ir_version,
    ir: row.ir as JsonObject,
    comment: row.comment,
    createdBy: some(row.created_by),
    createdAt: timestampFromDate(row.created_at),
  });
}

/** A node's count as the uint32 field holds it (ingestion.proto, NodeResult): larger counts read as its maximum. */
const rowCount = (n: number) => Math.min(n, 0xffff_ffff);

export function toNodeResult(o: NodeOutcome): NodeResult {
  return create(NodeResultSchema, {
    id: o.id,
    kind: o.kind,
    rowsOut: o.rowsOut === undefined ? undefined : rowCount(o.rowsOut),
    rowsLoaded: o.rowsLoaded === undefined ? undefined : rowCount(o.rowsLoaded),
    meta: o.meta as JsonObject,
  });
}

export function toPipelineRun(row: RunRow): PipelineRun {
  return create(PipelineRunSchema, {
    id: row.id,
    pipelineId: row.pipeline_id,
    irVersion: row.ir_version,
    ok: row.ok === true,
    trigger: row.trigger,
    nodeResults: row.node_results.map(toNodeResult),
    failedNodeId: some(row.failed_node_id),
    error: some(row.error),
    attempts: row.attempts,
    deadLettered: row.dead_lettered,
    startedAt: timestampFromDate(row.started_at),
    // Absent while the run is still going (its request may be waiting on it, or its caller timed out).
    finishedAt: row.finished_at ? timestampFromDate(row.finished_at) : undefined,
  });
}

/** Audit snapshots: the public shapes. */
export const connectorSnapshot = (c: Connector) => toJson(ConnectorSchema, c, { alwaysEmitImplicit: true }) as Record<string, unknown>;
export const schemaSnapshot = (s: DataSchema) => toJson(DataSchemaSchema, s, { alwaysEmitImplicit: true }) as Record<string, unknown>;
export const pipelineSnapshot = (p: Pipeline) => toJson(PipelineSchema, p, { alwaysEmitImplicit: true }) as Record<string, unknown>;
