import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CustomerSchema, type Customer, type GetCustomerRequest, type PutCustomerRequest } from "../../gen/decisioning/v1/configuration_pb.js";
import type { TenantContext } from "../platform/context.js";
import { notFound } from "../platform/errors.js";
import { customerIdOf } from "../customers/customer-id.js";
import type { CustomerCache } from "./customer-cache.js";
import type { CustomerRow, DecisionStore } from "./decision-store.js";

function toCustomer(tenantId: string, row: CustomerRow): Customer {
  return create(CustomerSchema, {
    customerId: row.customer_id,
    tenantId,
    attributes: row.attributes as JsonObject,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** Stored customer attributes, which Recommend merges under the request's; a write invalidates every process's cache. */
export class CustomerService {
  constructor(
    private readonly store: DecisionStore,
    private readonly customers: Pick<CustomerCache, "invalidate">,
  ) {}

  async putCustomer(ctx: TenantContext, req: PutCustomerRequest): Promise<Customer> {
    const customerId = customerIdOf(req.customerId);
    const row = await this.store.putCustomer(ctx.tenantId, customerId, req.attributes ?? {});
    await this.customers.invalidate(ctx.tenantId, customerId);
    return toCustomer(ctx.tenantId, row);
  }

  async getCustomer(ctx: TenantContext, req: GetCustomerRequest): Promise<Customer> {
    const row = await this.store.customer(ctx.tenantId, customerIdOf(req.customerId));
    if (!row) throw notFound("customer", req.customerId);
    return toCustomer(ctx.tenantId, row);
  }
}
