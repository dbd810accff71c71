// The syntax tree of a Realm Query Language query. Every node keeps its source span (character offsets,
// end exclusive) so checks on the tree can point at the text that caused them.

export interface Span {
  start: number;
  end: number;
}

export type Quantifier = 'any' | 'all' | 'none';

/** A literal as written; numbers keep their text so Decimal128 and Long comparisons stay exact. */
export type Literal =
  | { type: 'string'; value: string }
  /** `B64"…"`: realm-core writes strings with quotes or control characters this way. */
  | { type: 'base64'; bytes: Uint8Array }
  | { type: 'number'; text: string; value: number; integer?: bigint }
  | { type: 'boolean'; value: boolean }
  | { type: 'null' }
  /** `T<seconds>:<nanoseconds>` or `YYYY-MM-DD@HH:MM:SS[:nanoseconds]` (UTC). */
  | { type: 'timestamp'; seconds: bigint; nanoseconds: number }
  | { type: 'objectId'; hex: string }
  | { type: 'uuid'; hex: string };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'IN' | 'BEGINSWITH' | 'ENDSWITH' | 'CONTAINS' | 'LIKE';

export const STRING_OPS: readonly CompareOp[] = ['BEGINSWITH', 'ENDSWITH', 'CONTAINS', 'LIKE'];

/** One step of a property path: a name, or a name with a list index / dictionary key (`tags[0]`, `dict["k"]`). */
export interface PathSegment {
  name: string;
  index?: { kind: 'number'; value: number } | { kind: 'key'; value: string } | { kind: 'argument'; index: number };
  span: Span;
}

export type Expr =
  | { kind: 'path'; segments: PathSegment[]; quantifier?: Quantifier; postOp?: 'size' | 'type'; span: Span }
  | { kind: 'constant'; literal: Literal; span: Span }
  | { kind: 'argument'; index: number; quantifier?: Quantifier; span: Span }
  | { kind: 'list'; items: Expr[]; quantifier?: Quantifier; span: Span }
  | { kind: 'aggregate'; segments: PathSegment[]; op: 'max' | 'min' | 'sum' | 'avg'; field?: string; span: Span }
  | { kind: 'subquery'; segments: PathSegment[]; variable: string; predicate: Predicate; span: Span }
  | { kind: 'arithmetic'; op: '+' | '-' | '*' | '/'; left: Expr; right: Expr; span: Span };

export type Predicate =
  | { kind: 'true' | 'false'; span: Span }
  | { kind: 'and' | 'or'; operands: Predicate[]; span: Span }
  | { kind: 'not'; operand: Predicate; span: Span }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr; caseInsensitive: boolean; span: Span }
  | { kind: 'between'; value: Expr; low: Expr; high: Expr; span: Span };

export type Descriptor =
  | { kind: 'sort'; keys: Array<{ path: string[]; ascending: boolean }>; span: Span }
  | { kind: 'distinct'; paths: string[][]; span: Span }
  | { kind: 'limit'; count: number; span: Span };

export interface RqlQuery {
  predicate: Predicate;
  /** `SORT(…)`, `DISTINCT(…)`, `LIMIT(…)` in the order written; they act on the result set, not on one document. */
  descriptors: Descriptor[];
  /** How many `$n` arguments the query reads (the highest index + 1). */
  argumentCount: number;
}
