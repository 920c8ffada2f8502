import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { TenantContext } from "../platform/context.js";
import type { FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { ReportCell, ReportColumn, ReportSection } from "./report-document.js";
import { isIanaTimeZone } from "../scheduling/job-schedule.js";
import { DEFAULT_PERIOD_DAYS, MAX_PERIOD_DAYS, resolvePeriod, type ReportPeriod } from "./report-period.js";

export type ParameterType = "string" | "integer" | "date_or_timestamp" | "time_zone" | "uuid" | "enum";

export interface ParameterSpec {
  name: string;
  type: ParameterType;
  required?: boolean;
  default?: JsonValue;
  allowedValues?: readonly string[];
  min?: number;
  max?: number;
  description: string;
}

/** A source's validated parameters, defaults filled in. */
export type SourceParams = Record<string, string | number | undefined>;

export interface SourceResult {
  rows: ReportCell[][];
  /** The period the rows cover, when the source has one. */
  period: ReportPeriod | null;
}

/** One entry of the registry: what a template may name in `dataSources[].sourceKey`. */
export interface DataSource {
  key: string;
  title: string;
  description: string;
  parameters: readonly ParameterSpec[];
  columns: readonly ReportColumn[];
  chart?: ReportSection["chart"];
  /** Computes the rows; aggregation happens in PostgreSQL (report-data-store.ts). */
  compute(ctx: TenantContext, params: SourceParams, now: Date): Promise<SourceResult>;
}

/** The period parameters every time-bound source takes (docs/reports.md, "Periods"). */
export const PERIOD_PARAMETERS: readonly ParameterSpec[] = [
  { name: "from", type: "date_or_timestamp", description: "Start: a local date (its midnight in `timezone`) or an instant with offset; with `to`." },
  { name: "to", type: "date_or_timestamp", description: "End: a local date (inclusive, the whole day) or an instant with offset (exclusive); with `from`." },
  {
    name: "days", type: "integer", min: 1, max: MAX_PERIOD_DAYS, default: DEFAULT_PERIOD_DAYS,
    description: "Without from/to: the last `days` whole days before today in `timezone`.",
  },
  { name: "timezone", type: "time_zone", default: "UTC", description: "The IANA zone whose midnights bound the days." },
];

export function periodOf(params: SourceParams, now: Date, field = "params"): ReportPeriod {
  return resolvePeriod(
    { from: params.from as string | undefined, to: params.to as string | undefined, days: params.days as number | undefined, timezone: params.timezone as string },
    now,
    field,
  );
}

function checkValue(spec: ParameterSpec, value: JsonValue): string | null {
  switch (spec.type) {
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return "must be an integer";
      if ((spec.min !== undefined && value < spec.min) || (spec.max !== undefined && value > spec.max)) return `must be between ${spec.min} and ${spec.max}`;
      return null;
    case "time_zone":
      return typeof value === "string" && isIanaTimeZone(value) ? null : "must be an IANA time zone such as UTC or Europe/Berlin";
    case "uuid":
      return typeof value === "string" && isUuid(value) ? null : "must be a UUID";
    case "enum":
      return typeof value === "string" && spec.allowedValues!.includes(value) ? null : `must be one of ${spec.allowedValues!.join(", ")}`;
    default:
      return typeof value === "string" && value.length <= 200 ? null : "must be a string";
  }
}

/**
 * A template's `params` for `source`: unknown names, wrong types, missing required ones and
 * inconsistent periods are violations named `<field>.<param>`; the result has the defaults.
 */
export function validateParams(source: DataSource, params: JsonObject, field: string, now: Date): { params: SourceParams; violations: FieldViolation[] } {
  const violations: FieldViolation[] = [];
  const out: SourceParams = {};
  const known = new Set(source.parameters.map((p) => p.name));
  for (const name of Object.keys(params)) if (!known.has(name)) violations.push({ field: `${field}.${name}`, message: `is not a parameter of ${source.key}` });
  for (const spec of source.parameters) {
    const value = params[spec.name];
    if (value === undefined || value === null) {
      if (spec.required) violations.push({ field: `${field}.${spec.name}`, message: "is required" });
      else if (spec.default !== undefined && !(spec.name === "days" && (params.from !== undefined || params.to !== undefined))) out[spec.name] = spec.default as string | number;
      continue;
    }
    const problem = checkValue(spec, value);
    if (problem) violations.push({ field: `${field}.${spec.name}`, message: problem });
    else out[spec.name] = value as string | number;
  }
  if (!violations.length && known.has("timezone")) {
    try {
      periodOf(out, now, field);
    } catch (err) {
      const details = (err as { details?: { fields?: FieldViolation[] } }).details;
      violations.push(...(details?.fields ?? [{ field, message: (err as Error).message }]));
    }
  }
  return { params: out, violations };
}

/** The registry: one place that names every data source, for validation, the list route and runs. */
export class DataSourceRegistry {
  private readonly byKey: Map<string, DataSource>;

  constructor(sources: readonly DataSource[]) {
    this.byKey = new Map(sources.map((s) => [s.key, s]));
  }

  get(key: string): DataSource | undefined {
    return this.byKey.get(key);
  }

  all(): DataSource[] {
    return [...this.byKey.values()];
  }
}
