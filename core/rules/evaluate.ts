// Evaluation of rule expressions, following the reference algorithm of rules-and-sync §1.4. Any input
// is accepted: malformed parts evaluate to false, and nothing the expression or the injected
// function caller does makes evaluation throw.
import { bsonCompare, bsonEquals, CONVERSIONS, isPlainObject } from './bsonValues';
import { isExpansion, parseExpansion } from './expansion';

export interface EvaluationUser {
  id: string;
  /** `normal`, or `server` for API-key users. */
  type?: string;
  data?: Record<string, unknown>;
  custom_data?: Record<string, unknown>;
  identities?: unknown[];
}

export interface RuleEvaluationError {
  /** `function-failed`, `no-function-caller`, `too-deep`, `invalid-query`, `internal`. */
  reason: string;
  message: string;
  /** The function name, for `%function` failures. */
  functionName?: string;
  cause?: unknown;
}

export interface EvaluationEnv {
  user?: EvaluationUser;
  /** The partition value (string, number, bson ObjectId/Long/UUID, or null for the null partition). */
  partition?: unknown;
  /** The document after the write; bare field keys resolve against it when present. */
  root?: unknown;
  prevRoot?: unknown;
  this?: unknown;
  prev?: unknown;
  /** App values by name, secrets resolved. */
  values?: Record<string, unknown>;
  environment?: { tag?: string; values?: Record<string, unknown> };
  request?: Record<string, unknown>;
  /** Call arguments (service rules, `can_evaluate`); bare field keys resolve against them when there is no `root`. */
  args?: unknown;
  /** Runs an app function for `%function`. */
  callFunction?: (name: string, args: unknown[]) => Promise<unknown>;
  /** Told about problems that made a part of the expression false (a failing function, too deep a nesting). */
  onError?: (error: RuleEvaluationError) => void;
}

/**
 * One evaluated part of an expression: what was written, the values it resolved to and its result, with
 * the parts it is made of. A person reading it sees which part denied.
 */
export interface EvaluationTrace {
  /** The part as written: `"%%user.id": "%%partition"`, `$in`, `$or[1]`. */
  expression: string;
  /** The value the part tested (an expansion's value, the key's value). */
  subject?: unknown;
  /** The value it was compared with, after expansions, conversions and function calls. */
  operand?: unknown;
  result: boolean;
  /** Why a value is missing or a part failed (an expansion naming nothing, a failing function). */
  note?: string;
  children: EvaluationTrace[];
}

/** Deeper nesting than this evaluates to false (real expressions are a few levels deep). */
export const MAX_EVALUATION_DEPTH = 64;
const MAX_DEPTH = MAX_EVALUATION_DEPTH;

export const LOGICAL: ReadonlyMap<string, 'and' | 'or' | 'nor'> = new Map([
  ['%and', 'and'], ['$and', 'and'], ['%or', 'or'], ['$or', 'or'], ['%nor', 'nor'], ['$nor', 'nor'],
]);
export const NEGATION = new Set(['%not', '$not']);

export async function evaluateExpression(expr: unknown, env: EvaluationEnv): Promise<boolean> {
  const evaluator = new Evaluator(env);
  try {
    return await evaluator.expression(expr, 0);
  } catch (cause) {
    evaluator.fail({ reason: 'internal', message: `Rule evaluation failed: ${describeError(cause)}`, cause });
    return false;
  }
}

/** `evaluateExpression` with the trace of every part: the same evaluation, recorded. */
export async function evaluateExpressionTraced(expr: unknown, env: EvaluationEnv): Promise<{ result: boolean; trace: EvaluationTrace }> {
  const root: EvaluationTrace = { expression: describeValue(expr), result: false, children: [] };
  const evaluator = new Evaluator(env, [root]);
  try {
    root.result = await evaluator.expression(expr, 0);
  } catch (cause) {
    evaluator.fail({ reason: 'internal', message: `Rule evaluation failed: ${describeError(cause)}`, cause });
    root.result = false;
  }
  return { result: root.result, trace: root.children.length === 1 && root.children[0].expression === root.expression ? root.children[0] : root };
}

/** Shared by `evaluateExpression` and the query expansion of document filters. */
export class Evaluator {
  /** How many expansions or conversions yielded nothing since creation; the query expander reads it. */
  unresolved = 0;

  /** `stack`, when given, receives the trace: its last element is the part being evaluated. */
  constructor(private readonly env: EvaluationEnv, private readonly stack?: EvaluationTrace[]) {}

  /** Runs one part, recording it under the part being evaluated when tracing. */
  private async traced(expression: string, run: () => Promise<boolean>): Promise<boolean> {
    const stack = this.stack!;
    const node: EvaluationTrace = { expression, result: false, children: [] };
    stack[stack.length - 1].children.push(node);
    stack.push(node);
    try {
      node.result = await run();
      return node.result;
    } finally {
      stack.pop();
    }
  }

  /** Adds resolved values to the part being evaluated, when tracing. */
  private note(fields: Partial<Pick<EvaluationTrace, 'subject' | 'operand' | 'note'>>): void {
    if (!this.stack) return;
    const node = this.stack[this.stack.length - 1];
    if ('subject' in fields) node.subject = fields.subject;
    if ('operand' in fields) node.operand = fields.operand;
    if (fields.note) node.note = node.note ? `${node.note}; ${fields.note}` : fields.note;
  }

  async expression(expr: unknown, depth: number): Promise<boolean> {
    if (this.stack) return this.traced(describeValue(expr), () => this.untracedExpression(expr, depth));
    return this.untracedExpression(expr, depth);
  }

  private async untracedExpression(expr: unknown, depth: number): Promise<boolean> {
    if (typeof expr === 'boolean') return expr;
    if (!isPlainObject(expr)) this.note({ note: 'not true, false or an object: false' });
    if (!isPlainObject(expr) || this.tooDeep(depth)) return false;
    for (const [key, value] of Object.entries(expr)) {
      if (!(await this.condition(key, value, depth + 1))) return false;
    }
    return true;
  }

  private async condition(key: string, value: unknown, depth: number): Promise<boolean> {
    if (this.stack) return this.traced(`${JSON.stringify(key)}: ${describeValue(value)}`, () => this.untracedCondition(key, value, depth));
    return this.untracedCondition(key, value, depth);
  }

  private async untracedCondition(key: string, value: unknown, depth: number): Promise<boolean> {
    const logical = LOGICAL.get(key);
    if (logical) return this.combine(logical, value, (element) => this.expression(element, depth + 1));
    if (NEGATION.has(key)) return !(await this.expression(value, depth + 1));
    if (isExpansion(key)) {
      const subject = this.resolve(key);
      if (this.stack) this.note(subject === undefined ? { subject, note: `${key} names nothing (undefined equals nothing)` } : { subject });
      return this.match(subject, value, depth + 1);
    }
    // Any other operator standing where a subject belongs has no meaning.
    if (key.startsWith('$') || key.startsWith('%')) {
      this.note({ note: `${key} is not an operator that can stand here: false` });
      return false;
    }
    const subject = this.field(key);
    this.note({ subject });
    return this.match(subject, value, depth + 1);
  }

  /** Whether `value` holds for `subject`: equality, an operator object, or an embedded expression's result. */
  async match(subject: unknown, value: unknown, depth: number): Promise<boolean> {
    if (this.tooDeep(depth)) return false;
    if (isExpansion(value)) {
      const operand = this.resolve(value);
      if (this.stack) this.note(operand === undefined ? { operand, note: `${value} names nothing (undefined equals nothing)` } : { operand });
      return bsonEquals(subject, operand);
    }
    if (isPlainObject(value)) {
      const keys = Object.keys(value);
      if (keys.some(isExpansion)) {
        const operand = await this.expression(value, depth + 1);
        this.note({ operand });
        return bsonEquals(subject, operand);
      }
      if (keys.some(isOperatorKey)) return this.operators(subject, value, depth + 1);
    }
    const operand = await this.resolveValue(value, depth + 1);
    this.note({ operand });
    return bsonEquals(subject, operand);
  }

  private async operators(subject: unknown, object: Record<string, unknown>, depth: number): Promise<boolean> {
    for (const [op, operand] of Object.entries(object)) {
      if (!(await this.operator(subject, op, operand, depth))) return false;
    }
    return true;
  }

  private async operator(subject: unknown, op: string, operand: unknown, depth: number): Promise<boolean> {
    if (this.stack) {
      return this.traced(`${JSON.stringify(op)}: ${describeValue(operand)}`, () => {
        this.note({ subject });
        return this.untracedOperator(subject, op, operand, depth);
      });
    }
    return this.untracedOperator(subject, op, operand, depth);
  }

  /** The operand after resolution, noted in the trace. */
  private async resolvedOperand(operand: unknown, depth: number): Promise<unknown> {
    const resolved = await this.resolveValue(operand, depth);
    if (this.stack) this.note(resolved === undefined ? { operand: resolved, note: 'the operand resolved to nothing' } : { operand: resolved });
    return resolved;
  }

  private async untracedOperator(subject: unknown, op: string, operand: unknown, depth: number): Promise<boolean> {
    const logical = LOGICAL.get(op);
    if (logical) return this.combine(logical, operand, (element) => this.match(subject, element, depth + 1));
    if (NEGATION.has(op)) return !(await this.match(subject, operand, depth + 1));
    const conversion = CONVERSIONS.get(op);
    if (conversion) {
      const converted = conversion(await this.resolveValue(operand, depth + 1));
      if (this.stack) this.note(converted === undefined ? { operand: converted, note: `${op} could not convert its operand` } : { operand: converted });
      return bsonEquals(subject, converted);
    }
    switch (op) {
      case '$eq': return bsonEquals(subject, await this.resolvedOperand(operand, depth + 1));
      case '$ne': return !bsonEquals(subject, await this.resolvedOperand(operand, depth + 1));
      case '$gt': return this.ordered(subject, await this.resolvedOperand(operand, depth + 1), (c) => c > 0);
      case '$gte': return this.ordered(subject, await this.resolvedOperand(operand, depth + 1), (c) => c >= 0);
      case '$lt': return this.ordered(subject, await this.resolvedOperand(operand, depth + 1), (c) => c < 0);
      case '$lte': return this.ordered(subject, await this.resolvedOperand(operand, depth + 1), (c) => c <= 0);
      case '$in': case '%in': case '$nin': case '%nin': {
        const list = await this.resolvedOperand(operand, depth + 1);
        if (!Array.isArray(list)) {
          this.note({ note: `${op} needs a list` });
          return false;
        }
        const found = list.some((element) => bsonEquals(subject, element));
        return op.endsWith('nin') ? !found : found;
      }
      case '$exists': return (subject !== undefined) === Boolean(await this.resolvedOperand(operand, depth + 1));
      case '%function': {
        const returned = await this.callFunction(operand, depth + 1);
        this.note({ operand: returned });
        return bsonEquals(subject, returned);
      }
      default:
        this.note({ note: `unknown operator ${op}: false` });
        return false;
    }
  }

  /** Like MongoDB, an array subject satisfies an ordering when any element does. */
  private ordered(subject: unknown, operand: unknown, holds: (comparison: number) => boolean): boolean {
    if (Array.isArray(subject)) return subject.some((element) => this.ordered(element, operand, holds));
    const comparison = bsonCompare(subject, operand);
    return comparison !== undefined && holds(comparison);
  }

  private async combine(mode: 'and' | 'or' | 'nor', list: unknown, each: (element: unknown) => Promise<boolean>): Promise<boolean> {
    if (!Array.isArray(list)) {
      this.note({ note: `$${mode} needs a list: false` });
      return false;
    }
    for (const element of list) {
      const holds = await each(element);
      if (mode === 'and' && !holds) return false;
      if (mode === 'or' && holds) return true;
      if (mode === 'nor' && holds) return false;
    }
    return mode !== 'or';
  }

  /**
   * A literal with its expansions replaced by their values (§1.4 step 1); a single-key object of a
   * conversion or `%function` becomes that call's result. `renameOperators` turns `%in`-style keys into
   * MongoDB's `$in`, for queries.
   */
  async resolveValue(value: unknown, depth: number, renameOperators = false): Promise<unknown> {
    if (this.tooDeep(depth)) {
      this.unresolved++;
      return undefined;
    }
    if (isExpansion(value)) {
      const resolved = this.resolve(value);
      if (resolved === undefined) this.unresolved++;
      return resolved;
    }
    if (Array.isArray(value)) {
      const result: unknown[] = [];
      for (const element of value) result.push(await this.resolveValue(element, depth + 1, renameOperators));
      return result;
    }
    if (!isPlainObject(value)) return value;
    const keys = Object.keys(value);
    const [op] = keys;
    const conversion = CONVERSIONS.get(op);
    if (keys.length === 1 && (conversion || op === '%function')) {
      const converted = conversion ? conversion(await this.resolveValue(value[op], depth + 1))
        : await this.callFunction(value[op], depth + 1);
      if (converted === undefined) this.unresolved++;
      return converted;
    }
    const result: Record<string, unknown> = {};
    for (const key of keys) {
      const name = renameOperators && key.startsWith('%') && !isExpansion(key) ? `$${key.slice(1)}` : key;
      result[name] = await this.resolveValue(value[key], depth + 1, renameOperators);
    }
    return result;
  }

  /** The value of an expansion string; undefined when it names nothing. */
  resolve(text: string): unknown {
    const { name, path } = parseExpansion(text);
    return resolveExpansion(this.env, name, path);
  }

  /** A bare field key: a field of the document in data rules, of the arguments otherwise (§1.4 rule 6). */
  private field(key: string): unknown {
    return resolveField(this.env, key.split('.'));
  }

  private async callFunction(operand: unknown, depth: number): Promise<unknown> {
    if (!isPlainObject(operand) || typeof operand.name !== 'string') return undefined;
    const name = operand.name;
    const call = this.env.callFunction;
    if (!call) {
      this.fail({ reason: 'no-function-caller', message: `'%function' ${name} cannot run here: no function caller.`, functionName: name });
      return undefined;
    }
    const given = operand.arguments ?? [];
    if (!Array.isArray(given)) return undefined;
    const args = (await this.resolveValue(given, depth + 1)) as unknown[];
    try {
      return await call(name, args);
    } catch (cause) {
      this.fail({ reason: 'function-failed', message: `Function '${name}' failed in a rule: ${describeError(cause)}`, functionName: name, cause });
      return undefined;
    }
  }

  private tooDeep(depth: number): boolean {
    if (depth <= MAX_DEPTH) return false;
    this.fail({ reason: 'too-deep', message: `The rule expression is nested more than ${MAX_DEPTH} levels deep.` });
    return true;
  }

  fail(error: RuleEvaluationError): void {
    this.note({ note: error.message });
    try {
      this.env.onError?.(error);
    } catch {
      // A failing error callback must not turn a denial into an exception.
    }
  }
}

/** The value of a parsed expansion (`%%user.custom_data.team` → `user`, `['custom_data', 'team']`); undefined when it names nothing. */
export function resolveExpansion(env: EvaluationEnv, name: string, path: readonly string[]): unknown {
  switch (name) {
    case 'user':
      return path[0] === 'identities' ? lookup(env.user, path, IDENTITY_ALIASES) : lookup(env.user, path);
    case 'partition': return path.length === 0 ? env.partition : undefined;
    case 'root': return lookup(env.root, path);
    case 'prevRoot': return lookup(env.prevRoot, path);
    case 'this': return lookup(env.this, path);
    case 'prev': return lookup(env.prev, path);
    case 'values': return path.length === 0 ? undefined : lookup(env.values, path);
    case 'environment': return lookup(env.environment, path);
    case 'request': return lookup(env.request, path);
    case 'args': return lookup(env.args, path);
    case 'true': return path.length === 0 ? true : undefined;
    case 'false': return path.length === 0 ? false : undefined;
    default: return undefined;
  }
}

/** A bare field key: a field of the document in data rules, of the arguments otherwise (§1.4 rule 6). */
export function resolveField(env: EvaluationEnv, path: readonly string[]): unknown {
  return lookup(env.root !== undefined ? env.root : env.args, path);
}

export function isOperatorKey(key: string): boolean {
  return (key.startsWith('$') || key.startsWith('%')) && !isExpansion(key);
}

/** One page of the platform docs spells `provider_type` as `providerType`; both resolve (§1.2). */
const IDENTITY_ALIASES: ReadonlyMap<string, string> = new Map([['provider_type', 'providerType'], ['providerType', 'provider_type']]);

/**
 * Follows a dotted path through documents and arrays, MongoDB style: a numeric segment indexes an array,
 * any other segment collects that field from every element. Only own fields of plain objects are read.
 */
function lookup(base: unknown, path: readonly string[], aliases?: ReadonlyMap<string, string>): unknown {
  let current = base;
  for (const segment of path) {
    current = member(current, segment, aliases);
    if (current === undefined) return undefined;
  }
  return current;
}

function member(value: unknown, segment: string, aliases?: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) {
    if (/^\d+$/.test(segment)) return value[Number(segment)];
    const found = value.map((element) => member(element, segment, aliases)).filter((v) => v !== undefined);
    return found.length > 0 ? found.flat() : undefined;
  }
  if (!isReadableObject(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (Object.hasOwn(record, segment)) return record[segment];
  const alias = aliases?.get(segment);
  return alias !== undefined && Object.hasOwn(record, alias) ? record[alias] : undefined;
}

/** Documents, and objects the runtime builds for the env; not dates or bson values, whose fields are internals. */
function isReadableObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !(value instanceof Date) && typeof (value as { _bsontype?: unknown })._bsontype !== 'string';
}

/** Compact JSON of a part of an expression, as shown in a trace; long parts are cut. */
function describeValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
