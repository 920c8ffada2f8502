import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import {
  policy as policyExt,
  Plane,
  Role,
  ErrorFormat,
  RateLimitKey,
} from "../../gen/decisioning/v1/options_pb.js";
import type { RoleName } from "./context.js";

export type PlaneName = "control" | "data" | "public" | "cron";
export type ErrorFormatName = "structured" | "problem" | "oauth";

export interface RouteRateLimit {
  bucket: string;
  limit: number;
  windowSeconds: number;
  key: "tenant" | "client_id";
  failClosed: boolean;
  /** Successes count per key; every attempt counts per key and caller address (options.proto). */
  countSuccesses: boolean;
  /** The request's list (its property name) whose length is the number of hits a call takes; null: one hit. */
  costField: string | null;
}

/** The proto method options, resolved with defaults: what every door enforces. */
export interface ResolvedPolicy {
  plane: PlaneName;
  minRole: RoleName;
  maxBodyBytes: number;
  httpStatus: number;
  acceptForm: boolean;
  anyContentType: boolean;
  /** Replaces the tenant default on this route when set. */
  rateLimit: RouteRateLimit | null;
  errorFormat: ErrorFormatName;
  /** The JSON keys (JSON and proto names) the JSON doors read of a request; null: every key (options.proto). */
  acceptedFields: ReadonlySet<string> | null;
  /** The answer holds a secret shown once: `Cache-Control: no-store` on the JSON doors. */
  noStore: boolean;
}

/** The spec's default: 1,000 requests per 60-second sliding window per tenant (section 8). */
export const DEFAULT_RATE_LIMIT: RouteRateLimit = {
  bucket: "default",
  limit: 1000,
  windowSeconds: 60,
  key: "tenant",
  failClosed: false,
  countSuccesses: false,
  costField: null,
};

const PLANES: Record<Plane, PlaneName> = {
  [Plane.UNSPECIFIED]: "control",
  [Plane.CONTROL]: "control",
  [Plane.DATA]: "data",
  [Plane.PUBLIC]: "public",
  [Plane.CRON]: "cron",
};
const ROLE_NAMES: Record<Role, RoleName> = {
  [Role.UNSPECIFIED]: "viewer",
  [Role.VIEWER]: "viewer",
  [Role.EDITOR]: "editor",
  [Role.ADMIN]: "admin",
};

const cache = new WeakMap<DescMethod, ResolvedPolicy>();

/** The request property of a `cost_field`; a name that is not a list of the request fails at start-up. */
function costProperty(method: DescMethod, name: string): string {
  const field = method.input.fields.find((f) => f.name === name);
  if (field?.fieldKind !== "list") throw new Error(`${method.parent.typeName}.${method.name}: cost_field ${name} is not a list field of the request`);
  return field.localName;
}

/** Both spellings JSON may use for each accepted field; a name that is no field of the request fails at start-up. */
function acceptedKeys(method: DescMethod, names: string[]): ReadonlySet<string> | null {
  if (!names.length) return null;
  return new Set(
    names.flatMap((name) => {
      const field = method.input.fields.find((f) => f.name === name);
      if (!field) throw new Error(`${method.parent.typeName}.${method.name}: accepted_fields names no field ${name} of the request`);
      return [field.name, field.jsonName];
    }),
  );
}

export function methodPolicy(method: DescMethod, defaultBodyLimitBytes: number): ResolvedPolicy {
  const cached = cache.get(method);
  if (cached) return cached;
  const p = getOption(method, policyExt);
  const plane = PLANES[p.plane];
  const rl = p.rateLimit;
  const resolved: ResolvedPolicy = {
    plane,
    minRole: ROLE_NAMES[p.minRole],
    maxBodyBytes: p.maxBodyBytes || defaultBodyLimitBytes,
    httpStatus: p.httpStatus || 200,
    acceptForm: p.acceptForm,
    anyContentType: p.anyContentType,
    rateLimit: rl
      ? {
          bucket: rl.bucket,
          limit: rl.limit,
          windowSeconds: rl.windowSeconds,
          key: rl.key === RateLimitKey.CLIENT_ID ? "client_id" : "tenant",
          failClosed: rl.failClosed,
          countSuccesses: rl.countSuccesses,
          costField: rl.costField ? costProperty(method, rl.costField) : null,
        }
      : null,
    errorFormat:
      p.errorFormat === ErrorFormat.OAUTH
        ? "oauth"
        : p.errorFormat === ErrorFormat.STRUCTURED
          ? "structured"
          : p.errorFormat === ErrorFormat.PROBLEM
            ? "problem"
            : plane === "data"
              ? "structured"
              : "problem",
    acceptedFields: acceptedKeys(method, p.acceptedFields),
    noStore: p.noStore,
  };
  if (!hasOption(method, policyExt)) {
    throw new Error(`${method.parent.typeName}.${method.name} has no (decisioning.v1.policy) option`);
  }
  cache.set(method, resolved);
  return resolved;
}
