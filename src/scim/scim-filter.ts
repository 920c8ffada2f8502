import SCIMMY from "scimmy";
import { scimError } from "./scim-mapper.js";

/**
 * The attributes a filter may name, per resource, and whether their comparison ignores case
 * (RFC 7643: `caseExact` is false for userName, names and addresses; ids compare exactly). A filter
 * on anything else, though the schema declares it (title, addresses), is one this service cannot
 * evaluate, since it keeps no such value: 400 `invalidFilter` rather than a silently empty list.
 */
const USER_ATTRIBUTES: Record<string, "exact" | "caseless"> = {
  id: "exact",
  externalid: "exact",
  username: "caseless",
  displayname: "caseless",
  active: "exact",
  "name.formatted": "caseless",
  "name.givenname": "caseless",
  "name.familyname": "caseless",
  "emails.value": "caseless",
  "emails.type": "caseless",
  "emails.primary": "exact",
  "meta.created": "exact",
  "meta.lastmodified": "exact",
};
const GROUP_ATTRIBUTES: Record<string, "exact" | "caseless"> = {
  id: "exact",
  displayname: "caseless",
  "members.value": "exact",
};
export const FILTERABLE = { User: USER_ATTRIBUTES, Group: GROUP_ATTRIBUTES } as const;

const COMPARATORS = new Set(["eq", "ne", "co", "sw", "ew", "gt", "lt", "ge", "le", "pr"]);

type Node = Record<string, unknown>;

/**
 * A parsed SCIM filter (scimmy parses it: RFC 7644 3.4.2.2 grammar, `and`/`or`/`not`, value
 * paths such as `emails[type eq "work"]`), checked against what the resource can evaluate, with
 * the expected values of caseless attributes lower-cased to match `caseless()` views.
 */
export class ScimFilter {
  private constructor(
    private readonly parsed: InstanceType<typeof SCIMMY.Types.Filter>,
    private readonly attributes: Record<string, "exact" | "caseless">,
  ) {}

  static parse(expression: string, resource: keyof typeof FILTERABLE): ScimFilter {
    let parsed: InstanceType<typeof SCIMMY.Types.Filter>;
    try {
      parsed = new SCIMMY.Types.Filter(expression);
    } catch (err) {
      throw scimError(400, "invalidFilter", `filter: ${(err as Error).message}`);
    }
    const attributes = FILTERABLE[resource];
    // scimmy's parsed filters are immutable: the checked copy, with caseless values lower-cased, is matched instead.
    const checked = (parsed as unknown as Node[]).map((branch) => checkNode(branch, "", attributes));
    return new ScimFilter(new SCIMMY.Types.Filter(checked), attributes);
  }

  /** The resources (as `caseless` views) that match. */
  match<T extends Node>(views: T[]): T[] {
    return this.parsed.match(views) as T[];
  }

  /** A resource with the values of caseless attributes lower-cased, for `match`. */
  caseless<T extends Node>(resource: T): T {
    return lowerCaseless(resource, "", this.attributes) as T;
  }
}

function checkNode(node: Node, prefix: string, attributes: Record<string, "exact" | "caseless">): Node {
  const out: Node = {};
  for (const [attribute, expression] of Object.entries(node)) {
    const path = prefix ? `${prefix}.${attribute}` : attribute;
    const kind = attributes[path.toLowerCase()];
    if (!kind && !Object.keys(attributes).some((a) => a.startsWith(`${path.toLowerCase()}.`))) {
      throw scimError(400, "invalidFilter", `filter: attribute ${path} cannot be filtered on (filterable: ${Object.keys(attributes).join(", ")})`);
    }
    const several = Array.isArray(expression) && expression.every((e) => Array.isArray(e) || (e !== null && typeof e === "object"));
    const items = several ? (expression as unknown[]) : [expression];
    const copied = items.map((item) => {
      if (Array.isArray(item)) return checkComparison(item, path, kind);
      if (item && typeof item === "object") return checkNode(item as Node, path, attributes);
      throw scimError(400, "invalidFilter", `filter: no comparison for ${path}`);
    });
    out[attribute] = several ? copied : copied[0];
  }
  return out;
}

function checkComparison(expression: unknown[], path: string, kind: "exact" | "caseless" | undefined): unknown[] {
  const operands = String(expression[0]).toLowerCase() === "not" ? expression.slice(1) : expression;
  const comparator = String(operands[0]).toLowerCase();
  if (!kind || !COMPARATORS.has(comparator)) throw scimError(400, "invalidFilter", `filter: ${path} ${operands[0]} is not a comparison this service evaluates`);
  if (comparator !== "pr" && operands.length < 2) throw scimError(400, "invalidFilter", `filter: ${path} ${comparator} needs a value`);
  return expression.map((v, i) => (i === expression.length - 1 && kind === "caseless" && typeof v === "string" && comparator !== "pr" ? v.toLowerCase() : v));
}

function lowerCaseless(value: unknown, path: string, attributes: Record<string, "exact" | "caseless">): unknown {
  if (Array.isArray(value)) return value.map((v) => lowerCaseless(v, path, attributes));
  if (value instanceof Date || value === null || typeof value !== "object") {
    return typeof value === "string" && attributes[path.toLowerCase()] === "caseless" ? value.toLowerCase() : value;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lowerCaseless(v, path ? `${path}.${k}` : k, attributes)]));
}
