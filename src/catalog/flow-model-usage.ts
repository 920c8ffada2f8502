import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";
import { flowScoreNode, type DecisionFlow, type FlowModelUse } from "../core/index.js";

/**
 * The catalog read model the model registry's rollback guard asks: each active decision flow and
 * the models its score node names, from the configuration decisions run with (the published
 * version when there is one, else the draft), as DecisionConfigStore.decisionConfig reads it.
 */
export async function activeFlowModelUses(db: Sequelize, tenantId: string, t?: Transaction): Promise<FlowModelUse[]> {
  const rows = await selectRows<{ id: string; name: string; config: { nodes?: DecisionFlow["nodes"] } | null }>(
    db,
    `SELECT f.id, f.name, coalesce(v.config, f.config) AS config
     FROM decision_flows f
     LEFT JOIN decision_flow_versions v ON v.tenant_id = f.tenant_id AND v.flow_id = f.id AND v.version = f.published_version
     WHERE f.tenant_id = $1 AND f.deleted_at IS NULL AND f.status = 'active' ORDER BY f.name`,
    [tenantId],
    t,
  );
  return rows.map((row) => {
    const node = flowScoreNode({ id: row.id, name: row.name, nodes: Array.isArray(row.config?.nodes) ? row.config.nodes : [] });
    return { flowId: row.id, flowName: row.name, modelKey: node.modelKey, shadowModelKeys: node.shadowModelKeys ?? [] };
  });
}
