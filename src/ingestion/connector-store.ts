import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";

export interface ConnectorConfigRow {
  bucket: string;
  region: string;
  prefix: string;
  endpoint: string;
  forcePathStyle: boolean;
}

export interface ConnectorRow {
  tenant_id: string;
  id: string;
  name: string;
  type: string;
  description: string;
  config: ConnectorConfigRow;
  auth_method: "iam_role" | "access_keys";
  /** The non-secret part of authConfig: roleArn, accessKeyId. */
  auth_config: { roleArn?: string; accessKeyId?: string };
  /** The secret part, sealed by the settings cipher: externalId, secretAccessKey. */
  secrets: string | null;
  secrets_key_id: string | null;
  status: "active" | "error";
  last_error: string | null;
  last_tested_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type ConnectorFields = Pick<ConnectorRow, "name" | "type" | "description" | "config" | "auth_method" | "auth_config" | "secrets" | "secrets_key_id" | "status" | "last_error">;

const COLUMNS = "tenant_id, id, name, type, description, config, auth_method, auth_config, secrets, secrets_key_id, status, last_error, last_tested_at, created_at, updated_at";

/** Connectors of a tenant. Tenant first, always. */
export class ConnectorStore {
  constructor(private readonly db: Sequelize) {}

  async find(tenantId: string, id: string, t?: Transaction): Promise<ConnectorRow | null> {
    const [row] = await selectRows<ConnectorRow>(this.db, `SELECT ${COLUMNS} FROM ingestion_connectors WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`, [tenantId, id], t);
    return row ?? null;
  }

  page(tenantId: string, page: CursorPageRequest): Promise<ConnectorRow[]> {
    return selectRows<ConnectorRow>(
      this.db,
      `SELECT ${COLUMNS} FROM ingestion_connectors WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [tenantId, page.cursor, page.limit + 1],
    );
  }

  /** Ids and names, for IR validation. */
  names(tenantId: string): Promise<Array<{ id: string; name: string }>> {
    return selectRows(this.db, "SELECT id, name FROM ingestion_connectors WHERE tenant_id = $1", [tenantId]);
  }

  async insert(t: Transaction, tenantId: string, id: string, f: ConnectorFields, testedAt: Date): Promise<ConnectorRow> {
    const [row] = await execReturning<ConnectorRow>(
      this.db,
      `INSERT INTO ingestion_connectors (tenant_id, id, name, type, description, config, auth_method, auth_config, secrets, secrets_key_id, status, last_error, last_tested_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING ${COLUMNS}`,
      [tenantId, id, f.name, f.type, f.description, JSON.stringify(f.config), f.auth_method, JSON.stringify(f.auth_config), f.secrets, f.secrets_key_id, f.status, f.last_error, testedAt],
      t,
    );
    return row;
  }

  async update(t: Transaction, tenantId: string, id: string, f: ConnectorFields, testedAt: Date): Promise<ConnectorRow> {
    const [row] = await execReturning<ConnectorRow>(
      this.db,
      `UPDATE ingestion_connectors SET name = $3, type = $4, description = $5, config = $6, auth_method = $7, auth_config = $8, secrets = $9,
         secrets_key_id = $10, status = $11, last_error = $12, last_tested_at = $13, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [tenantId, id, f.name, f.type, f.description, JSON.stringify(f.config), f.auth_method, JSON.stringify(f.auth_config), f.secrets, f.secrets_key_id, f.status, f.last_error, testedAt],
      t,
    );
    return row;
  }

  async setStatus(t: Transaction, tenantId: string, id: string, status: ConnectorRow["status"], lastError: string | null): Promise<ConnectorRow> {
    const [row] = await execReturning<ConnectorRow>(
      this.db,
      `UPDATE ingestion_connectors SET status = $3, last_error = $4, last_tested_at = now(), updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [tenantId, id, status, lastError],
      t,
    );
    return row;
  }

  async remove(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM ingestion_connectors WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** Whether a pipeline names the connector: as its connectorId, or (by id or name) in a source node of its current IR. */
  async inUse(tenantId: string, id: string, name: string, t?: Transaction): Promise<boolean> {
    const rows = await selectRows(
      this.db,
      `SELECT 1 FROM ingestion_pipelines WHERE tenant_id = $1 AND connector_id = $2
       UNION ALL
       SELECT 1 FROM ingestion_pipelines p
       JOIN ingestion_pipeline_ir ir ON ir.tenant_id = p.tenant_id AND ir.pipeline_id = p.id AND ir.version = p.current_version
       WHERE p.tenant_id = $1 AND jsonb_path_exists(ir.ir, $4::jsonpath, jsonb_build_object('id', $2::text, 'name', $3::text))
       LIMIT 1`,
      // The path is bound: sequelize would read its $variables as bind parameters.
      [tenantId, id, name, "$.nodes[*] ? (@.connector == $id || @.connector == $name)"],
      t,
    );
    return rows.length > 0;
  }
}
