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
}

/** The spec's default: 1,000 requests per 60-second sliding window per tenant (section 8). */
export const DEFAULT_RATE_LIMIT: RouteRateLimit = {
  bucket: "default",
  limit: 1000,
  windowSeconds: 60,
  key: "tenant",
  failClosed: false,
  countSuccesses: false,
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
  };
  if (!hasOption(method, policyExt)) {
    throw new Error(`${method.parent.typeName}.${method.name} has no (decisioning.v1.policy) option`);
  }
  cache.set(method, resolved);
  return resolved;
}
