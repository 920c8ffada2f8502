import type { JsonObject } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { ReportFormat } from "./report-document.js";

export interface TemplateDataSource {
  sourceKey: string;
  params: JsonObject;
}

export interface TemplateSection {
  id: string;
  title: string;
  dataSourceIndex: number;
}

export interface ReportTemplateRow {
  tenant_id: string;
  id: string;
  name: string;
  description: string;
  data_sources: TemplateDataSource[];
  sections: TemplateSection[];
  formats: ReportFormat[];
  narrative: { enabled: boolean; prompt: string };
  destinations: string[];
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What a create or update writes: the whole validated template. */
export type ReportTemplateValues = Pick<ReportTemplateRow, "name" | "description" | "data_sources" | "sections" | "formats" | "narrative" | "destinations" | "enabled">;

const bind = (v: ReportTemplateValues) => [
  v.name, v.description, JSON.stringify(v.data_sources), JSON.stringify(v.sections), v.formats, JSON.stringify(v.narrative), v.destinations, v.enabled,
];

/** report_templates, tenant first. Writes run in the caller's transaction (holding the tenant's write lock). */
export class ReportTemplateStore {
  constructor(private readonly db: Sequelize) {}

  list(tenantId: string): Promise<ReportTemplateRow[]> {
    return selectRows(this.db, "SELECT * FROM report_templates WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC", [tenantId]);
  }

  async find(tenantId: string, id: string, t?: Transaction): Promise<ReportTemplateRow | null> {
    const [row] = await selectRows<ReportTemplateRow>(
      this.db,
      `SELECT * FROM report_templates WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  async insert(t: Transaction, tenantId: string, id: string, v: ReportTemplateValues): Promise<ReportTemplateRow> {
    const [row] = await execReturning<ReportTemplateRow>(
      this.db,
      `INSERT INTO report_templates (tenant_id, id, name, description, data_sources, sections, formats, narrative, destinations, enabled)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [tenantId, id, ...bind(v)],
      t,
    );
    return row;
  }

  async update(t: Transaction, tenantId: string, id: string, v: ReportTemplateValues): Promise<ReportTemplateRow> {
    const [row] = await execReturning<ReportTemplateRow>(
      this.db,
      `UPDATE report_templates SET name = $3, description = $4, data_sources = $5, sections = $6, formats = $7, narrative = $8,
         destinations = $9, enabled = $10, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id, ...bind(v)],
      t,
    );
    return row;
  }

  /** Its schedules go with it (ON DELETE CASCADE); its runs stay as history. */
  async delete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM report_templates WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** Templates and schedules that deliver to the provider, in words. */
  async usingProvider(tenantId: string, providerId: string, t: Transaction): Promise<string[]> {
    const rows = await selectRows<{ what: string; name: string }>(
      this.db,
      `SELECT 'report template' AS what, name FROM report_templates WHERE tenant_id = $1 AND $2::uuid = ANY(destinations)
       UNION ALL
       SELECT 'report schedule', name FROM report_schedules WHERE tenant_id = $1 AND $2::uuid = ANY(destinations)
       ORDER BY 1, 2`,
      [tenantId, providerId],
      t,
    );
    return rows.map((r) => `${r.what} "${r.name}"`);
  }

  /** Part of the workspace reset, in its transaction (schedules go with their templates). */
  async deleteAll(t: Transaction, tenantId: string): Promise<void> {
    await this.db.query("DELETE FROM report_templates WHERE tenant_id = $1", { bind: [tenantId], transaction: t });
  }
}
