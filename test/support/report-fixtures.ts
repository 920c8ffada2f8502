import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { rest } from "./clients.js";
import type { TestService } from "./service.js";

/** A valid template body over one data source; `over` replaces fields. */
export function templateBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "Weekly offers",
    description: "Offers and channels",
    dataSources: [{ sourceKey: "offer_performance", params: { days: 7 } }],
    sections: [{ id: "offers", title: "Offer performance", dataSourceIndex: 0 }],
    formats: ["csv"],
    ...over,
  };
}

export async function createTemplate(svc: TestService, apiKey: string, over: Record<string, unknown> = {}): Promise<any> {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/reports/templates", { key: apiKey, body: templateBody(over) });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/**
 * Seeds decisions the way Recommend and Respond store them (migrations 0004, 0005, 0010): a
 * recommendation with its funnel figures, one impression row per offer (no idempotency key), a
 * trace row, and outcomes with idempotency keys. Returns the recommendation id.
 */
export async function seedDecision(
  svc: TestService,
  tenantId: string,
  d: {
    at: string;
    offers: { offerId: string; channelId?: string | null; placementId?: string | null }[];
    qualified?: number;
    suppressed?: number;
    degraded?: boolean;
    rejected?: number;
    outcomes?: { rank: number; outcome: string; value?: number }[];
  },
): Promise<string> {
  const id = randomUUID();
  const offers = d.offers.map((o, i) => ({ offerId: o.offerId, rank: i + 1 }));
  await svc.sql(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, qualified_count, suppressed_count, degraded_scoring, created_at)
     VALUES ($1, $2, 'c1', $3, $4, $5, $6, $7)`,
    [tenantId, id, JSON.stringify(offers), d.qualified ?? null, d.suppressed ?? null, d.degraded ?? false, d.at],
  );
  for (const [i, o] of d.offers.entries()) {
    await svc.sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, rank, offer_id, channel_id, placement_id, outcome, created_at)
       VALUES ($1, $2, 'c1', $3, $4, $5, $6, $7, 'impression', $8)`,
      [tenantId, randomUUID(), id, i + 1, o.offerId, o.channelId ?? null, o.placementId ?? null, d.at],
    );
  }
  for (const out of d.outcomes ?? []) {
    const o = d.offers[out.rank - 1];
    await svc.sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, rank, offer_id, channel_id, placement_id, outcome,
         idempotency_key, conversion_value, created_at)
       VALUES ($1, $2, 'c1', $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [tenantId, randomUUID(), id, out.rank, o.offerId, o.channelId ?? null, o.placementId ?? null, out.outcome, randomUUID(), out.value ?? null, d.at],
    );
  }
  if (d.rejected !== undefined) {
    await svc.sql(
      `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, selected_count, rejected_count, trace, inputs_hash, policy_version_hash, created_at)
       VALUES ($1, $2, $3, 'c1', $4, $5, '\\x00'::bytea, 'h', 'p', $6)`,
      [tenantId, randomUUID(), id, d.offers.length, d.rejected, d.at],
    );
  }
  return id;
}

export async function seedOffer(svc: TestService, tenantId: string, name: string): Promise<string> {
  const id = randomUUID();
  await svc.sql("INSERT INTO offers (tenant_id, id, name) VALUES ($1, $2, $3)", [tenantId, id, name]);
  return id;
}

export async function seedCatalogEntry(svc: TestService, tenantId: string, kind: "channel" | "placement", name: string): Promise<string> {
  const id = randomUUID();
  await svc.sql("INSERT INTO catalog_entries (tenant_id, id, kind, name) VALUES ($1, $2, $3, $4)", [tenantId, id, kind, name]);
  return id;
}
