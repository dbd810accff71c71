// What a subscription query reads, checked against flexible sync's settings (`queryable_fields_names`,
// `collection_queryable_fields_names`, `indexed_queryable_fields_names` of sync/config.json or the admin
// form), and the RQL forms flexible sync does not run (aggregates, SORT/DISTINCT/LIMIT, paths into
// embedded or linked objects, SUBQUERY), each with the span of the text at fault.
import type { Expr, PathSegment, Predicate, RqlQuery, Span } from './ast';
import { isPlainObject, literalValue } from './values';

/**
 * Fields every table may be queried on whatever the settings list: the primary key. (The platform's
 * documentation does not say; apps commonly list `_id` anyway, which changes nothing.)
 */
export const ALWAYS_QUERYABLE_FIELDS: readonly string[] = ['_id'];

export interface FieldUse {
  /** The top-level property (what queryable field settings name). */
  field: string;
  /** The whole dotted path, subquery variables replaced by the list they range over. */
  path: string;
  span: Span;
}

/** The queryable field settings in the form `sync/config.json` writes them (the admin form is the same). */
export interface QueryableFieldSettings {
  queryable_fields_names?: unknown;
  indexed_queryable_fields_names?: unknown;
  collection_queryable_fields_names?: unknown;
}

export interface QueryProblem {
  message: string;
  span: Span;
  /** The field at fault, for problems about one field. */
  field?: string;
  kind: 'not-queryable' | 'unsupported' | 'indexed-field-missing';
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * The fields a table's subscriptions may read: global, that collection's own (keyed by the table name or
 * by its collection's name when they differ), the indexed one, and `_id`.
 */
export function queryableFieldsOf(settings: QueryableFieldSettings, table: string, collection = table): Set<string> {
  const byCollection = isPlainObject(settings.collection_queryable_fields_names) ? settings.collection_queryable_fields_names : {};
  const perCollection = [...new Set([table, collection])].flatMap((key) => (Object.hasOwn(byCollection, key) ? strings(byCollection[key]) : []));
  return new Set([...ALWAYS_QUERYABLE_FIELDS, ...strings(settings.queryable_fields_names), ...strings(settings.indexed_queryable_fields_names), ...perCollection]);
}

/** Every property the query reads, in text order (SORT/DISTINCT paths carry their descriptor's span). */
export function queriedFields(query: RqlQuery): FieldUse[] {
  const uses: FieldUse[] = [];
  const visitPath = (segments: PathSegment[], span: Span, variables: Map<string, string>) => {
    const first = segments[0]!;
    const base = variables.get(first.name);
    const names = segments.map((s) => s.name);
    const path = base !== undefined ? [base, ...names.slice(1)].join('.') : names.join('.');
    uses.push({ field: path.split('.')[0]!, path, span });
  };
  const visitExpr = (expr: Expr, variables: Map<string, string>): void => {
    switch (expr.kind) {
      case 'path':
        visitPath(expr.segments, expr.span, variables);
        return;
      case 'aggregate': {
        const segments = expr.field ? [...expr.segments, { name: expr.field, span: expr.span }] : expr.segments;
        visitPath(segments, expr.span, variables);
        return;
      }
      case 'subquery': {
        visitPath(expr.segments, expr.span, variables);
        const base = variables.get(expr.segments[0]!.name);
        const listPath = [base ?? expr.segments[0]!.name, ...expr.segments.slice(1).map((s) => s.name)].join('.');
        visitPredicate(expr.predicate, new Map([...variables, [expr.variable, listPath]]));
        return;
      }
      case 'arithmetic':
        visitExpr(expr.left, variables);
        visitExpr(expr.right, variables);
        return;
      case 'list':
        expr.items.forEach((item) => visitExpr(item, variables));
        return;
      default:
        return;
    }
  };
  const visitPredicate = (predicate: Predicate, variables: Map<string, string>): void => {
    switch (predicate.kind) {
      case 'and': case 'or':
        predicate.operands.forEach((p) => visitPredicate(p, variables));
        return;
      case 'not':
        visitPredicate(predicate.operand, variables);
        return;
      case 'compare':
        visitExpr(predicate.left, variables);
        visitExpr(predicate.right, variables);
        return;
      case 'between':
        visitExpr(predicate.value, variables);
        visitExpr(predicate.low, variables);
        visitExpr(predicate.high, variables);
        return;
      default:
        return;
    }
  };
  visitPredicate(query.predicate, new Map());
  for (const d of query.descriptors) {
    const paths = d.kind === 'sort' ? d.keys.map((k) => k.path) : d.kind === 'distinct' ? d.paths : [];
    for (const p of paths) uses.push({ field: p[0]!, path: p.join('.'), span: d.span });
  }
  return uses;
}

/**
 * The parts of a subscription's LIKE patterns holding `?` add up to at most this many characters: such a
 * part is searched in n × ⌈its length / 32⌉ steps (evaluate.ts), on the thread serving every client, for
 * each document an upload or a change checks (issue 33: patterns of 30,000 held a 90,000-character value
 * for seconds). Patterns of `*` and literals alone are linear and not counted.
 */
export const MAX_LIKE_SINGLES_CHARS = 256;

/** RQL that flexible sync subscriptions may not use (the platform's "unsupported query operators", and bounds of our own). */
export function unsupportedInSubscriptions(query: RqlQuery): QueryProblem[] {
  const problems: QueryProblem[] = [];
  const add = (span: Span, message: string) => problems.push({ kind: 'unsupported', span, message });
  let singles = 0;
  const like = (p: Predicate & { kind: 'compare' }): void => {
    const pattern = p.right.kind === 'constant' ? literalValue(p.right.literal) : undefined;
    // A pattern read from the document would escape the bound below.
    if (p.right.kind === 'path') {
      add(p.right.span, 'a LIKE pattern in a subscription must be a string, not a property');
      return;
    }
    if (typeof pattern !== 'string') return;
    for (const part of pattern.split('*')) if (part.includes('?')) singles += part.length;
    if (singles > MAX_LIKE_SINGLES_CHARS) {
      singles = -Infinity;
      add(p.span, `the LIKE patterns of a subscription may hold at most ${MAX_LIKE_SINGLES_CHARS} characters in the parts (between *) that use ?`);
    }
  };
  const visitExpr = (expr: Expr): void => {
    switch (expr.kind) {
      case 'path':
        if (expr.segments.length > 1) add(expr.span, `flexible sync cannot query properties of embedded or linked objects ("${expr.segments.map((s) => s.name).join('.')}")`);
        else if (expr.segments[0]!.index) add(expr.span, `flexible sync cannot query one element of a list or dictionary ("${expr.segments[0]!.name}[…]")`);
        if (expr.postOp === 'size') add(expr.span, 'flexible sync does not support @count/@size in subscriptions');
        if (expr.postOp === 'type') add(expr.span, 'flexible sync does not support @type in subscriptions');
        return;
      case 'aggregate':
        add(expr.span, `flexible sync does not support @${expr.op} in subscriptions`);
        return;
      case 'subquery':
        add(expr.span, 'flexible sync does not support SUBQUERY in subscriptions');
        return;
      case 'arithmetic':
        add(expr.span, 'flexible sync does not support arithmetic (+ - * /) in subscriptions');
        return;
      default:
        return;
    }
  };
  const visit = (p: Predicate): void => {
    switch (p.kind) {
      case 'and': case 'or': p.operands.forEach(visit); return;
      case 'not': visit(p.operand); return;
      case 'compare': visitExpr(p.left); visitExpr(p.right); if (p.op === 'LIKE') like(p); return;
      case 'between': visitExpr(p.value); return;
      default: return;
    }
  };
  visit(query.predicate);
  for (const d of query.descriptors) add(d.span, `flexible sync does not support ${d.kind.toUpperCase()} in subscriptions`);
  return problems;
}

/** Whether the predicate pins `field` with == or IN against constants in every branch that can match. */
function pinsIndexedField(p: Predicate, field: string): boolean {
  switch (p.kind) {
    case 'and': return p.operands.some((o) => pinsIndexedField(o, field));
    case 'or': return p.operands.every((o) => pinsIndexedField(o, field));
    case 'false': return true;
    case 'compare': {
      if (p.op !== '==' && p.op !== 'IN') return false;
      const isField = (e: Expr) => e.kind === 'path' && !e.quantifier && !e.postOp && e.segments.length === 1 && !e.segments[0]!.index && e.segments[0]!.name === field;
      const isConstant = (e: Expr) => e.kind === 'constant' || e.kind === 'argument' || (e.kind === 'list' && !e.quantifier && e.items.every((i) => i.kind === 'constant' || i.kind === 'argument'));
      return (isField(p.left) && isConstant(p.right)) || (p.op === '==' && isField(p.right) && isConstant(p.left));
    }
    default: return false;
  }
}

/**
 * Everything that stops `query` from being a subscription on `table` under these settings: fields that
 * are not queryable (the platform's QUERY_ERROR names each one), unsupported operators, and a missing
 * indexed queryable field. Empty when the subscription is acceptable.
 */
export function checkSubscriptionQuery(query: RqlQuery, table: string, settings: QueryableFieldSettings, collection = table): QueryProblem[] {
  const problems: QueryProblem[] = [];
  const allowed = queryableFieldsOf(settings, table, collection);
  const reported = new Set<string>();
  for (const use of queriedFields(query)) {
    if (allowed.has(use.field) || reported.has(use.field)) continue;
    reported.add(use.field);
    problems.push({ kind: 'not-queryable', field: use.field, span: use.span, message: `unsupported query for table "${table}": key "${use.field}" is not a queryable field` });
  }
  problems.push(...unsupportedInSubscriptions(query));
  const indexed = strings(settings.indexed_queryable_fields_names)[0];
  if (indexed !== undefined && !pinsIndexedField(query.predicate, indexed)) {
    problems.push({
      kind: 'indexed-field-missing', field: indexed, span: query.predicate.span,
      message: `unsupported query for table "${table}": the indexed queryable field "${indexed}" must be compared with == or IN against constant values, joined by AND to the rest of the query`,
    });
  }
  return problems;
}
