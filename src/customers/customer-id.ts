import { invalidField } from "../platform/errors.js";

/** The longest customer id the service stores, as Recommend and the customers routes accept it. */
export const MAX_CUSTOMER_ID = 255;

/** A path's customer id, trimmed; 400 naming `customerId` when empty or too long. */
export function customerIdOf(raw: string): string {
  const id = raw.trim();
  if (!id || id.length > MAX_CUSTOMER_ID) throw invalidField("customerId", `must be 1 to ${MAX_CUSTOMER_ID} characters`);
  return id;
}
