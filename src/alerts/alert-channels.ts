import type { JsonValue } from "@bufbuild/protobuf";
import type { Destination } from "../notifications/outbound.js";
import type { FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";

/** The notification providers' read model (notifications' `existingProviderIds`): which of these ids name providers of the tenant. */
export interface ProviderDirectory {
  existing(tenantId: string, ids: readonly string[]): Promise<ReadonlySet<string>>;
}

export const MAX_CHANNELS = 20;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const SHAPES = "must be a provider id, {providerId} or {type: webhook|email, target}";

/**
 * Spec 2.8 `channels`: a provider UUID string, `{providerId}`, or the legacy `{type, target}`,
 * mixed in one list. Returns the destinations in order, or the violations naming each bad item.
 * Whether a legacy webhook's address may be reached is the dispatcher's check (SSRF), at send time.
 */
export function parseChannels(items: readonly JsonValue[]): { destinations: Destination[]; violations: FieldViolation[] } {
  const destinations: Destination[] = [];
  const violations: FieldViolation[] = [];
  if (items.length === 0) violations.push({ field: "channels", message: "must name at least one destination" });
  if (items.length > MAX_CHANNELS) violations.push({ field: "channels", message: `must name at most ${MAX_CHANNELS} destinations` });
  items.forEach((item, i) => {
    const field = `channels[${i}]`;
    const bad = (message: string, at = field) => violations.push({ field: at, message });
    if (typeof item === "string") {
      if (isUuid(item)) destinations.push({ providerId: item.toLowerCase() });
      else bad(SHAPES);
      return;
    }
    if (typeof item !== "object" || item === null || Array.isArray(item)) return bad(SHAPES);
    if ("providerId" in item) {
      if (typeof item.providerId === "string" && isUuid(item.providerId)) destinations.push({ providerId: item.providerId.toLowerCase() });
      else bad("must be a provider id", `${field}.providerId`);
      return;
    }
    const { type, target } = item;
    if (type !== "webhook" && type !== "email") return bad(type === undefined ? SHAPES : "must be webhook or email", type === undefined ? field : `${field}.type`);
    if (typeof target !== "string" || !target.trim()) return bad("is required", `${field}.target`);
    if (type === "email" && !EMAIL.test(target)) return bad("must be an e-mail address", `${field}.target`);
    if (type === "webhook" && !isHttpUrl(target)) return bad("must be an http or https URL", `${field}.target`);
    destinations.push({ type, target });
  });
  return { destinations, violations };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

/** Spec 7: a provider id of another tenant (or of none) in the body is 400, never a 404 or a leak. */
export async function unknownProviderViolations(
  providers: ProviderDirectory,
  tenantId: string,
  channels: readonly JsonValue[],
  destinations: readonly Destination[],
): Promise<FieldViolation[]> {
  const ids = destinations.flatMap((d) => ("providerId" in d ? [d.providerId] : []));
  if (!ids.length) return [];
  const existing = await providers.existing(tenantId, ids);
  return channels.flatMap((item, i) => {
    const id = typeof item === "string" ? item : (item as { providerId?: unknown } | null)?.providerId;
    if (typeof id !== "string" || existing.has(id.toLowerCase())) return [];
    return [{ field: typeof item === "string" ? `channels[${i}]` : `channels[${i}].providerId`, message: `unknown notification provider ${id}` }];
  });
}
