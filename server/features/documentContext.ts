// Where the cursor is inside a JSON config file: which kind of file, which JSON path, whether it is on a
// property key or a value, the string being typed, and whether that spot is part of a rule expression.
// Works on half-typed JSON (unterminated strings, missing values), because that is what completion sees.
import { getLocation, type JSONPath } from 'jsonc-parser';
import type { JsonFile, Position, Range } from '../../core/json';
import type { ExpressionContext } from '../../core/rules';
import { schemaKindForPath } from '../../core/validate/structure';

export interface DocumentContext {
  file: JsonFile;
  /** Schema kind of the file (`auth-providers`, `sync-config`, …), from its path in the app. */
  kind: string | undefined;
  offset: number;
  /** Path of the property or array element at the cursor; for a key, ends with the key being written. */
  path: JSONPath;
  /** On a property key (or where a new key goes), or on a value. */
  target: 'key' | 'value';
  /** The string the cursor is in, when it is in one. */
  string?: {
    /** Its text from after the opening quote to the cursor. */
    prefix: string;
    /** Its whole content, for hovers. */
    value: string;
    /** Range of the string's content (inside the quotes, to the end of what is typed). */
    contentRange: Range;
    /** Range of the whole token, quotes included. */
    tokenRange: Range;
  };
  /** Set when the cursor is inside a rule expression. */
  expression?: {
    context: ExpressionContext;
    /** Path of the expression's root value. */
    root: JSONPath;
  };
}

export function documentContextAt(file: JsonFile, position: Position): DocumentContext {
  const offset = file.offsetAt(position);
  const location = getLocation(file.text, offset);
  const kind = schemaKindForPath(file.relPath);
  const path = [...location.path];
  const node = location.previousNode;
  let string: DocumentContext['string'];
  if (node && (node.type === 'string' || node.type === 'property')) {
    const raw = file.text.slice(node.offset, node.offset + node.length);
    const terminated = raw.length >= 2 && raw.endsWith('"') && !raw.endsWith('\\"');
    const contentEnd = node.offset + node.length - (terminated ? 1 : 0);
    if (offset > node.offset && offset <= contentEnd) {
      string = {
        prefix: file.text.slice(node.offset + 1, offset),
        value: String(node.value ?? ''),
        contentRange: file.rangeOf(node.offset + 1, contentEnd - node.offset - 1),
        tokenRange: file.rangeOf(node.offset, node.length),
      };
    }
  }
  const context: DocumentContext = { file, kind, offset, path, target: location.isAtPropertyKey ? 'key' : 'value', ...(string ? { string } : {}) };
  const expression = expressionAt(kind, path);
  if (expression) context.expression = expression;
  return context;
}

/**
 * The rule expression a path lies in, mirroring where core/validate/expressions.ts finds expressions:
 * sync permissions, data-access roles and filters, and function `can_evaluate`.
 */
function expressionAt(kind: string | undefined, path: JSONPath): DocumentContext['expression'] {
  const within = (rootLength: number, context: ExpressionContext) => (path.length > rootLength ? { context, root: path.slice(0, rootLength) } : undefined);
  const [a, b, c, d] = path;
  switch (kind) {
    case 'sync-config':
      return a === 'partition' && b === 'permissions' && (c === 'read' || c === 'write') ? within(3, 'partition-sync') : undefined;
    case 'functions-config':
      return typeof a === 'number' && b === 'can_evaluate' ? within(2, 'can-evaluate') : undefined;
    case 'rules':
    case 'default-rule': {
      if (a === 'filters' && typeof b === 'number') {
        if (c === 'apply_when') return within(3, 'data-rule');
        if (c === 'query') return within(3, 'filter');
        return undefined;
      }
      if (a !== 'roles' || typeof b !== 'number') return undefined;
      if (c === 'apply_when' || c === 'read' || c === 'write') return within(3, 'data-rule');
      if (c === 'document_filters' && (d === 'read' || d === 'write')) return within(4, 'filter');
      if (c === 'additional_fields' && (d === 'read' || d === 'write')) return within(4, 'data-rule');
      if (c === 'fields') return fieldRuleExpression(path, 3);
      return undefined;
    }
    default:
      return undefined;
  }
}

/** `fields.<name>.read|write`, possibly below nested `fields`. */
function fieldRuleExpression(path: JSONPath, start: number): DocumentContext['expression'] {
  let i = start;
  while (typeof path[i] === 'string' && i + 1 < path.length) {
    const next = path[i + 1];
    if (next === 'read' || next === 'write') return path.length > i + 2 ? { context: 'data-rule', root: path.slice(0, i + 2) } : undefined;
    if (next !== 'fields') return undefined;
    i += 2;
  }
  return undefined;
}
