/**
 * The transform expression language of pipeline IR (docs/ingestion.md, "Expressions"): parsed once
 * per run into a tree, then evaluated per row. A hand-written recursive-descent parser; nothing is
 * ever handed to eval or new Function, so a formula can only do what this grammar says.
 *
 *   expr    := or
 *   or      := and ("or" and)*
 *   and     := not ("and" not)*
 *   not     := "not" not | cmp
 *   cmp     := concat (("=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=") concat)?
 *   concat  := add ("||" add)*
 *   add     := mul (("+" | "-") mul)*
 *   mul     := unary (("*" | "/" | "%") unary)*
 *   unary   := "-" unary | primary
 *   primary := number | string | "true" | "false" | "null" | field | call | "(" expr ")"
 *   field   := identifier | "[" any text but "]" "]"
 *   call    := identifier "(" (expr ("," expr)*)? ")"
 *
 * Null: a missing or empty field is null; arithmetic, concatenation and comparison with a null operand give null; `and`/`or` follow
 * SQL's three-valued logic; coalesce, if and is_null handle nulls explicitly.
 */

export type ExprValue = string | number | boolean | null;

export type Expr =
  | { t: "lit"; v: ExprValue }
  | { t: "field"; name: string }
  | { t: "un"; op: "-" | "not"; a: Expr }
  | { t: "bin"; op: string; a: Expr; b: Expr }
  | { t: "call"; fn: string; args: Expr[] };

/** A formula that does not parse, or a value an operation cannot take; `at` is a character offset. */
export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly at: number | null = null,
  ) {
    super(at === null ? message : `${message} at character ${at + 1}`);
    this.name = "ExpressionError";
  }
}

type Token = { k: "num" | "str" | "id" | "field" | "op" | "end"; v: string; at: number };

const OPS = ["<=", ">=", "!=", "<>", "==", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ","];
const MAX_FORMULA = 2000;
const MAX_DEPTH = 64;

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const at = i;
    if (/[0-9.]/.test(c)) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
      if (!m) throw new ExpressionError("bad number", at);
      out.push({ k: "num", v: m[0], at });
      i += m[0].length;
    } else if (c === "'" || c === '"') {
      let s = "";
      i++;
      for (;;) {
        if (i >= src.length) throw new ExpressionError("unterminated string", at);
        if (src[i] === c) {
          // A doubled quote is a literal quote, as in SQL.
          if (src[i + 1] === c) {
            s += c;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        s += src[i++];
      }
      out.push({ k: "str", v: s, at });
    } else if (c === "[") {
      const end = src.indexOf("]", i);
      if (end < 0) throw new ExpressionError("unterminated [field]", at);
      out.push({ k: "field", v: src.slice(i + 1, end), at });
      i = end + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      out.push({ k: "id", v: m[0], at });
      i += m[0].length;
    } else {
      const op = OPS.find((o) => src.startsWith(o, i));
      if (!op) throw new ExpressionError(`unexpected "${c}"`, at);
      out.push({ k: "op", v: op, at });
      i += op.length;
    }
  }
  out.push({ k: "end", v: "", at: src.length });
  return out;
}

/** Functions and how many arguments each takes ([min, max]). */
const FUNCTIONS: Record<string, [number, number]> = {
  upper: [1, 1],
  lower: [1, 1],
  trim: [1, 1],
  length: [1, 1],
  substr: [2, 3],
  replace: [3, 3],
  concat: [1, 32],
  starts_with: [2, 2],
  ends_with: [2, 2],
  contains: [2, 2],
  coalesce: [1, 32],
  if: [3, 3],
  is_null: [1, 1],
  to_number: [1, 1],
  to_string: [1, 1],
  round: [1, 2],
  floor: [1, 1],
  ceil: [1, 1],
  abs: [1, 1],
};

/** Parses a formula; throws ExpressionError naming the position of the problem. */
export function parseExpression(src: string): Expr {
  if (typeof src !== "string" || !src.trim()) throw new ExpressionError("formula is empty");
  if (src.length > MAX_FORMULA) throw new ExpressionError(`formula is longer than ${MAX_FORMULA} characters`);
  const toks = tokenize(src);
  let p = 0;
  let depth = 0;
  const peek = () => toks[p];
  const isOp = (v: string) => toks[p].k === "op" && toks[p].v === v;
  const isWord = (v: string) => toks[p].k === "id" && toks[p].v.toLowerCase() === v;
  const expect = (v: string) => {
    if (!isOp(v)) throw new ExpressionError(`expected "${v}"`, peek().at);
    p++;
  };
  const nest = <T>(fn: () => T): T => {
    if (++depth > MAX_DEPTH) throw new ExpressionError("formula nests too deeply", peek().at);
    try {
      return fn();
    } finally {
      depth--;
    }
  };

  const or = (): Expr => nest(() => {
    let a = and();
    while (isWord("or")) {
      p++;
      a = { t: "bin", op: "or", a, b: and() };
    }
    return a;
  });
  const and = (): Expr => {
    let a = not();
    while (isWord("and")) {
      p++;
      a = { t: "bin", op: "and", a, b: not() };
    }
    return a;
  };
  const not = (): Expr => {
    if (isWord("not")) {
      p++;
      return nest(() => ({ t: "un", op: "not", a: not() }));
    }
    return cmp();
  };
  const cmp = (): Expr => {
    const a = concat();
    const t = peek();
    if (t.k === "op" && ["=", "==", "!=", "<>", "<", "<=", ">", ">="].includes(t.v)) {
      p++;
      const op = t.v === "==" ? "=" : t.v === "<>" ? "!=" : t.v;
      return { t: "bin", op, a, b: concat() };
    }
    return a;
  };
  const concat = (): Expr => {
    let a = add();
    while (isOp("||")) {
      p++;
      a = { t: "bin", op: "||", a, b: add() };
    }
    return a;
  };
  const add = (): Expr => {
    let a = mul();
    while (isOp("+") || isOp("-")) {
      const op = toks[p++].v;
      a = { t: "bin", op, a, b: mul() };
    }
    return a;
  };
  const mul = (): Expr => {
    let a = unary();
    while (isOp("*") || isOp("/") || isOp("%")) {
      const op = toks[p++].v;
      a = { t: "bin", op, a, b: unary() };
    }
    return a;
  };
  const unary = (): Expr => {
    if (isOp("-")) {
      p++;
      return nest(() => ({ t: "un", op: "-", a: unary() }));
    }
    return primary();
  };
  const primary = (): Expr => {
    const t = peek();
    if (t.k === "num") {
      p++;
      return { t: "lit", v: Number(t.v) };
    }
    if (t.k === "str") {
      p++;
      return { t: "lit", v: t.v };
    }
    if (t.k === "field") {
      p++;
      return { t: "field", name: t.v };
    }
    if (isOp("(")) {
      p++;
      const e = or();
      expect(")");
      return e;
    }
    if (t.k === "id") {
      p++;
      const word = t.v.toLowerCase();
      if (isOp("(")) {
        const arity = FUNCTIONS[word];
        if (!arity) throw new ExpressionError(`unknown function ${t.v}`, t.at);
        p++;
        const args: Expr[] = [];
        if (!isOp(")")) {
          args.push(or());
          while (isOp(",")) {
            p++;
            args.push(or());
          }
        }
        expect(")");
        if (args.length < arity[0] || args.length > arity[1]) {
          throw new ExpressionError(`${word} takes ${arity[0] === arity[1] ? arity[0] : `${arity[0]} to ${arity[1]}`} arguments`, t.at);
        }
        return { t: "call", fn: word, args };
      }
      if (word === "true" || word === "false") return { t: "lit", v: word === "true" };
      if (word === "null") return { t: "lit", v: null };
      if (["and", "or", "not"].includes(word)) throw new ExpressionError(`unexpected "${t.v}"`, t.at);
      return { t: "field", name: t.v };
    }
    throw new ExpressionError(t.k === "end" ? "formula ends too early" : `unexpected "${t.v}"`, t.at);
  };

  const tree = or();
  if (peek().k !== "end") throw new ExpressionError(`unexpected "${peek().v}"`, peek().at);
  return tree;
}

/** The fields a formula reads. */
export function expressionFields(e: Expr, into = new Set<string>()): Set<string> {
  if (e.t === "field") into.add(e.name);
  else if (e.t === "un") expressionFields(e.a, into);
  else if (e.t === "bin") {
    expressionFields(e.a, into);
    expressionFields(e.b, into);
  } else if (e.t === "call") for (const a of e.args) expressionFields(a, into);
  return into;
}

/** A number from a number, a numeric string or a boolean; anything else is an error. */
function num(v: ExprValue, what: string): number {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  const s = String(v).trim();
  const n = s === "" ? NaN : Number(s);
  if (!Number.isFinite(n)) throw new ExpressionError(`${what}: "${String(v).slice(0, 50)}" is not a number`);
  return n;
}

const str = (v: ExprValue): string => (typeof v === "number" ? String(v) : String(v));

function truthy(v: ExprValue): boolean | null {
  if (v === null) return null;
  if (typeof v === "boolean") return v;
  if (typeof v === "number") return v !== 0;
  const s = v.trim().toLowerCase();
  return !(s === "" || s === "false" || s === "0");
}

/** Numbers compare as numbers when both sides are numbers or numeric strings; otherwise as text. */
function compare(a: ExprValue, b: ExprValue): number {
  const na = typeof a === "number" ? a : typeof a === "string" && a.trim() !== "" ? Number(a) : NaN;
  const nb = typeof b === "number" ? b : typeof b === "string" && b.trim() !== "" ? Number(b) : NaN;
  if (typeof a === "boolean" || typeof b === "boolean") return Number(truthy(a)) - Number(truthy(b));
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  const sa = str(a);
  const sb = str(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** Evaluates a parsed formula over one row; a missing field reads as null. */
export function evaluateExpression(e: Expr, row: Readonly<Record<string, unknown>>): ExprValue {
  switch (e.t) {
    case "lit":
      return e.v;
    case "field": {
      const v = row[e.name];
      // CSV has no null but the empty field, so an empty string reads as null (as the loader stores it).
      if (v === undefined || v === null || v === "") return null;
      return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : JSON.stringify(v);
    }
    case "un": {
      const a = evaluateExpression(e.a, row);
      if (e.op === "not") {
        const b = truthy(a);
        return b === null ? null : !b;
      }
      return a === null ? null : -num(a, "-");
    }
    case "bin":
      return binary(e.op, e.a, e.b, row);
    case "call":
      return call(e.fn, e.args, row);
  }
}

function binary(op: string, ea: Expr, eb: Expr, row: Readonly<Record<string, unknown>>): ExprValue {
  if (op === "and" || op === "or") {
    const a = truthy(evaluateExpression(ea, row));
    if (op === "and" && a === false) return false;
    if (op === "or" && a === true) return true;
    const b = truthy(evaluateExpression(eb, row));
    if (op === "and") return b === false ? false : a === null || b === null ? null : true;
    return b === true ? true : a === null || b === null ? null : false;
  }
  const a = evaluateExpression(ea, row);
  const b = evaluateExpression(eb, row);
  if (a === null || b === null) return null;
  switch (op) {
    case "||":
      return str(a) + str(b);
    case "+":
      return num(a, "+") + num(b, "+");
    case "-":
      return num(a, "-") - num(b, "-");
    case "*":
      return num(a, "*") * num(b, "*");
    case "/":
    case "%": {
      const d = num(b, op);
      // Division by zero gives null, like SQL's NULLIF idiom, rather than Infinity.
      if (d === 0) return null;
      return op === "/" ? num(a, op) / d : num(a, op) % d;
    }
    case "=":
      return compare(a, b) === 0;
    case "!=":
      return compare(a, b) !== 0;
    case "<":
      return compare(a, b) < 0;
    case "<=":
      return compare(a, b) <= 0;
    case ">":
      return compare(a, b) > 0;
    default:
      return compare(a, b) >= 0;
  }
}

function call(fn: string, args: Expr[], row: Readonly<Record<string, unknown>>): ExprValue {
  if (fn === "if") {
    const c = truthy(evaluateExpression(args[0], row));
    return evaluateExpression(c ? args[1] : args[2], row);
  }
  if (fn === "coalesce") {
    for (const a of args) {
      const v = evaluateExpression(a, row);
      if (v !== null) return v;
    }
    return null;
  }
  const v = args.map((a) => evaluateExpression(a, row));
  if (fn === "is_null") return v[0] === null;
  if (fn === "concat") return v.map((x) => (x === null ? "" : str(x))).join("");
  if (v.some((x) => x === null)) return null;
  const s = () => str(v[0]!);
  switch (fn) {
    case "upper":
      return s().toUpperCase();
    case "lower":
      return s().toLowerCase();
    case "trim":
      return s().trim();
    case "length":
      return [...s()].length;
    case "substr": {
      // 1-based start, as in SQL.
      const chars = [...s()];
      const start = Math.max(0, Math.trunc(num(v[1], "substr")) - 1);
      const len = v.length > 2 ? Math.max(0, Math.trunc(num(v[2], "substr"))) : chars.length;
      return chars.slice(start, start + len).join("");
    }
    case "replace":
      return s().split(str(v[1]!)).join(str(v[2]!));
    case "starts_with":
      return s().startsWith(str(v[1]!));
    case "ends_with":
      return s().endsWith(str(v[1]!));
    case "contains":
      return s().includes(str(v[1]!));
    case "to_number":
      return num(v[0], "to_number");
    case "to_string":
      return s();
    case "round": {
      const digits = v.length > 1 ? Math.trunc(num(v[1], "round")) : 0;
      const f = 10 ** Math.min(Math.max(digits, 0), 12);
      return Math.round(num(v[0], "round") * f) / f;
    }
    case "floor":
      return Math.floor(num(v[0], "floor"));
    case "ceil":
      return Math.ceil(num(v[0], "ceil"));
    default:
      return Math.abs(num(v[0], "abs"));
  }
}
