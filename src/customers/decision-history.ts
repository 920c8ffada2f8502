import type { RfmFacts } from "../core/index.js";

/**
 * What CLV and the profile read of the decisions domain (its `readModel`): stored attributes, the
 * interaction history and its RFM aggregate, customer ids in pages, and experiment variants.
 */
export interface DecisionHistory {
  customer(tenantId: string, customerId: string): Promise<{ attributes: Record<string, unknown>; created_at: Date; updated_at: Date } | null>;
  rfmFacts(tenantId: string, customerIds: readonly string[]): Promise<Map<string, RfmFacts>>;
  customerIdsAfter(tenantId: string, after: string, limit: number): Promise<string[]>;
  recentInteractions(tenantId: string, customerId: string, limit: number): Promise<
    Array<{ id: string; offer_id: string; channel_id: string | null; outcome: string; at: Date }>
  >;
  customerExperiments(tenantId: string, customerId: string): Promise<Array<{ experiment_id: string; experiment_variant: string | null; first_at: Date }>>;
}
