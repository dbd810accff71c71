// Static analysis of one rule expression inside a JSON config file. Walks the positioned syntax tree so
// every diagnostic lands on the exact key or string that caused it; never throws, whatever the JSON.
import type { JsonFile, JsonNode, JSONPath, Range } from '../json';
import type { DiagnosticSink, Severity } from '../diagnostics';
import { checkExpansion, closest, isExpansion } from './expansion';
import {
  CONTEXT_TITLES, OPERATORS, OPERATORS_BY_NAME, TOP_LEVEL_QUERY_OPERATORS, isUndocumentedIn,
  type ExpressionContext, type ExpressionFacts, type OperatorInfo, type PartitionKeyType,
} from './tables';

/** Deeper nesting than this is reported rather than walked (real expressions are a few levels deep). */
export const MAX_EXPRESSION_DEPTH = 64;

export function analyzeExpression(file: JsonFile, path: JSONPath, context: ExpressionContext, facts: ExpressionFacts, sink: DiagnosticSink): void {
  const node = file.nodeAt(path);
  if (node) new Analyzer(file, context, facts, sink).expression(node, 0);
}

/** What the left side of a comparison is known to hold; used to spot comparisons that can never be true. */
type StaticType = 'partition' | 'string' | 'number' | 'boolean' | 'null' | 'unknown';

interface Subject {
  type: StaticType;
  /** The property `"<key>": <value>` the comparison is written in, for quick fixes. */
  property?: JsonNode;
  /** The key text, to build suggestions. */
  key: string;
}

const PLAIN_SUBJECT: Subject = { type: 'unknown', key: '' };

class Analyzer {
  private readonly functionNames?: ReadonlySet<string>;
  private readonly customDataFields?: ReadonlySet<string>;
  private readonly valueNames?: ReadonlySet<string>;
  private readonly environmentValueNames?: ReadonlySet<string>;
  private readonly partitionType?: PartitionKeyType;
  private reportedTooDeep = false;

  constructor(private readonly file: JsonFile, private readonly context: ExpressionContext, facts: ExpressionFacts, private readonly sink: DiagnosticSink) {
    this.functionNames = toSet(facts.functionNames);
    this.customDataFields = toSet(facts.customDataFields);
    this.valueNames = toSet(facts.valueNames);
    this.environmentValueNames = toSet(facts.environmentValueNames);
    this.partitionType = context === 'partition-sync' ? facts.partitionType : undefined;
  }

  /** A position that holds a whole expression: `true`, `false` or an object of conditions. */
  expression(node: JsonNode, depth: number): void {
    if (this.tooDeep(node, depth)) return;
    if (node.type === 'boolean') return;
    if (node.type !== 'object') {
      this.report(node, 'error', 'rule/invalid-expression', `An expression is true, false or an object; found ${describe(node)}.`);
      return;
    }
    for (const property of node.children ?? []) {
      const [keyNode, valueNode] = property.children ?? [];
      if (!keyNode || typeof keyNode.value !== 'string') continue;
      this.condition(property, keyNode, keyNode.value, valueNode, depth + 1);
    }
  }

  private condition(property: JsonNode, keyNode: JsonNode, key: string, valueNode: JsonNode | undefined, depth: number): void {
    if (isExpansion(key)) {
      this.expansion(keyNode, key);
      if (valueNode) this.matchValue(valueNode, { type: staticTypeOfExpansion(key), property, key }, depth);
      return;
    }
    if (key.startsWith('$') || key.startsWith('%')) {
      const op = this.operator(keyNode, key);
      if (!op || !valueNode) return;
      if (op.kind === 'logical') this.list(valueNode, op, (element) => this.expression(element, depth + 1));
      else if (op.kind === 'negation') this.expression(valueNode, depth);
      else if (!(op.kind === 'query' && TOP_LEVEL_QUERY_OPERATORS.has(op.name))) {
        this.report(keyNode, 'error', 'rule/misplaced-operator', `'${key}' applies to a subject: write {"<expansion or field>": {"${key}": …}}.`);
      }
      return;
    }
    if (this.context === 'partition-sync' || this.context === 'flexible-sync') {
      this.report(keyNode, 'warning', 'rule/bare-field-in-sync',
        `'${key}' is a bare field name, which means nothing in ${CONTEXT_TITLES[this.context]}: there is no document or argument to read it from. Compare an expansion instead, such as '%%user.custom_data.<field>'.`,
        { field: key });
    }
    if (valueNode) this.matchValue(valueNode, PLAIN_SUBJECT, depth);
  }

  /** The value side of a condition: a literal, an expansion, an operator object or an embedded expression. */
  private matchValue(node: JsonNode, subject: Subject, depth: number): void {
    if (this.tooDeep(node, depth)) return;
    if (node.type === 'object') {
      const keys = (node.children ?? []).map((p) => p.children?.[0]?.value).filter((k): k is string => typeof k === 'string');
      if (keys.some(isExpansion)) this.expression(node, depth);
      else if (keys.some(isOperatorKey)) this.operatorObject(node, subject, depth);
      else this.literal(node, depth);
      return;
    }
    if (node.type === 'array') { this.literal(node, depth); return; }
    if (node.type === 'string' && isExpansion(node.value)) this.expansion(node, node.value);
    this.comparedWith(subject, node, true);
  }

  private operatorObject(node: JsonNode, subject: Subject, depth: number): void {
    for (const property of node.children ?? []) {
      const [keyNode, valueNode] = property.children ?? [];
      if (!keyNode || typeof keyNode.value !== 'string') continue;
      const key = keyNode.value;
      if (!isOperatorKey(key)) {
        this.report(keyNode, 'error', 'rule/operand-shape', `'${key}' is not an operator; an object of operators cannot also hold field names.`);
        continue;
      }
      const op = this.operator(keyNode, key);
      if (op && valueNode) this.operand(op, keyNode, valueNode, subject, depth + 1);
    }
  }

  private operand(op: OperatorInfo, keyNode: JsonNode, value: JsonNode, subject: Subject, depth: number): void {
    switch (op.operand) {
      case 'value':
        if (op.name === '$eq') this.comparedWith(subject, value, false);
        this.literal(value, depth);
        return;
      case 'array-or-expansion':
        if (value.type === 'array') {
          for (const element of value.children ?? []) {
            this.literal(element, depth + 1);
            this.comparedWith(subject, element, false);
          }
        } else if (value.type === 'string' && isExpansion(value.value)) this.expansion(value, value.value);
        else this.report(value, 'error', 'rule/operand-shape', `'${op.name}' needs an array or an expansion that yields one; found ${describe(value)}.`);
        return;
      case 'boolean':
        if (value.type !== 'boolean') this.report(value, 'error', 'rule/operand-shape', `'${op.name}' needs true or false; found ${describe(value)}.`);
        return;
      case 'literal-or-expansion':
        if (value.type === 'object' || value.type === 'array') {
          this.report(value, 'error', 'rule/operand-shape', `'${op.name}' takes a literal or a single expansion, not ${describe(value)}.`);
        } else if (value.type === 'string' && isExpansion(value.value)) this.expansion(value, value.value);
        return;
      case 'function-call':
        this.functionCall(keyNode, value, depth);
        return;
      case 'array':
        this.list(value, op, (element) => this.matchValue(element, subject, depth + 1));
        return;
      case 'expression':
        this.matchValue(value, subject, depth);
        return;
      case 'query':
        this.literal(value, depth);
        return;
    }
  }

  private functionCall(keyNode: JsonNode, value: JsonNode, depth: number): void {
    if (this.context === 'partition-sync') {
      this.report(keyNode, 'information', 'rule/migration-blocker', "'%function' rules have no flexible sync equivalent; this permission cannot migrate to flexible sync as written.");
    }
    if (value.type !== 'object') {
      this.report(value, 'error', 'rule/operand-shape', `'%function' needs {"name": "<function>", "arguments": [...]}; found ${describe(value)}.`);
      return;
    }
    let nameNode: JsonNode | undefined;
    for (const property of value.children ?? []) {
      const [k, v] = property.children ?? [];
      if (!k || !v) continue;
      if (k.value === 'name') {
        nameNode = v;
        if (v.type !== 'string') this.report(v, 'error', 'rule/operand-shape', `'%function.name' must be a string; found ${describe(v)}.`);
      } else if (k.value === 'arguments') {
        if (v.type === 'array') this.literal(v, depth);
        else this.report(v, 'error', 'rule/operand-shape', `'%function.arguments' must be an array; found ${describe(v)}.`);
      } else {
        this.report(k, 'error', 'rule/operand-shape', `'%function' takes only 'name' and 'arguments', not '${String(k.value)}'.`);
      }
    }
    if (!nameNode) {
      this.report(keyNode, 'error', 'rule/operand-shape', "'%function' needs a 'name'.");
      return;
    }
    const name = nameNode.value;
    if (typeof name === 'string' && this.functionNames && !this.functionNames.has(name)) {
      const suggestion = closest(name, this.functionNames);
      this.report(nameNode, 'error', 'rule/unknown-function', `No function named '${name}'.`, { name, ...(suggestion ? { suggestion } : {}) });
    }
  }

  /** A literal value (possibly an array or document); only the expansions inside it need checking. */
  private literal(node: JsonNode, depth: number): void {
    if (this.tooDeep(node, depth)) return;
    if (node.type === 'string' && isExpansion(node.value)) this.expansion(node, node.value);
    else if (node.type === 'array') for (const element of node.children ?? []) this.literal(element, depth + 1);
    else if (node.type === 'object') for (const property of node.children ?? []) {
      const value = property.children?.[1];
      if (value) this.literal(value, depth + 1);
    }
  }

  private list(value: JsonNode, op: OperatorInfo, each: (element: JsonNode) => void): void {
    if (value.type !== 'array') {
      this.report(value, 'error', 'rule/operand-shape', `'${op.name}' needs an array; found ${describe(value)}.`);
      return;
    }
    const elements = value.children ?? [];
    if (elements.length === 0) this.report(value, 'error', 'rule/operand-shape', `'${op.name}' needs a non-empty array.`);
    for (const element of elements) each(element);
  }

  /** Checks an operator key; returns its table entry when it is usable here. */
  private operator(keyNode: JsonNode, key: string): OperatorInfo | undefined {
    const op = OPERATORS_BY_NAME.get(key);
    if (!op) {
      const candidates = OPERATORS.filter((o) => o.allowedIn.includes(this.context)).map((o) => o.name);
      const suggestion = closest(key, candidates);
      this.report(keyNode, 'error', 'rule/unknown-operator', `Unknown operator '${key}'.` + (suggestion ? ` Did you mean '${suggestion}'?` : ''),
        { operator: key, ...(suggestion ? { suggestion } : {}) });
      return undefined;
    }
    if (!op.allowedIn.includes(this.context)) {
      this.report(keyNode, 'error', 'rule/operator-not-allowed', `'${key}' cannot be used in ${CONTEXT_TITLES[this.context]}.`, { operator: key, context: this.context });
      return undefined;
    }
    if (isUndocumentedIn(op, this.context)) {
      this.report(keyNode, 'warning', 'rule/undocumented-operator', `'${key}' is not documented by the platform; it works, but test the rule before relying on it.`);
    }
    return op;
  }

  private expansion(node: JsonNode, text: string): void {
    const check = checkExpansion(text);
    if (!check.ok) {
      this.report(node, 'error', 'rule/unknown-expansion', check.message + (check.suggestion ? ` Did you mean '${check.suggestion}'?` : ''),
        { expansion: text, ...(check.suggestion ? { suggestion: check.suggestion } : {}) });
      return;
    }
    const { info, parsed } = check;
    if (info.name === 'partition') {
      if (this.context !== 'partition-sync') {
        this.report(node, 'error', 'rule/partition-outside-sync', `'%%partition' exists only in partition-based sync permissions, not in ${CONTEXT_TITLES[this.context]}.`);
      } else {
        this.report(node, 'information', 'rule/migration-blocker', "'%%partition' has no flexible sync equivalent; this permission cannot migrate to flexible sync as written.");
      }
      return;
    }
    if (!info.allowedIn.includes(this.context)) {
      this.report(node, 'error', 'rule/expansion-not-allowed', `'${info.label}' is not available in ${CONTEXT_TITLES[this.context]}.`, { expansion: info.label, context: this.context });
      return;
    }
    const [member, field] = parsed.path;
    if (info.name === 'user' && member === 'custom_data' && field !== undefined && this.customDataFields && !this.customDataFields.has(field)) {
      const suggestion = closest(field, this.customDataFields);
      this.report(node, 'warning', 'rule/unknown-custom-data-field', `The custom user data schema has no field '${field}'.`,
        { field, ...(suggestion ? { suggestion: `%%user.custom_data.${[suggestion, ...parsed.path.slice(2)].join('.')}` } : {}) });
    }
    if (info.name === 'values') this.knownName(node, member, this.valueNames, 'app value');
    if (info.name === 'environment' && member === 'values' && field !== undefined) this.knownName(node, field, this.environmentValueNames, 'environment value');
  }

  private knownName(node: JsonNode, name: string, known: ReadonlySet<string> | undefined, what: string): void {
    if (!known || known.has(name)) return;
    const suggestion = closest(name, known);
    this.report(node, 'warning', 'rule/unknown-value', `No ${what} named '${name}'.`, { name, ...(suggestion ? { suggestion } : {}) });
  }

  /**
   * Flags equality between the partition and a value whose type can never match `partition.type`.
   * `direct`: the value is the whole right side of the property, so the fix may rewrite the property.
   */
  private comparedWith(subject: Subject, value: JsonNode, direct: boolean): void {
    const partitionType = this.partitionType;
    if (!partitionType) return;
    const valueType = staticTypeOfNode(value);
    const other = subject.type === 'partition' ? valueType : valueType === 'partition' ? subject.type : undefined;
    if (other === undefined || compatible(partitionType, other)) return;
    const userIdSide = subject.key === '%%user.id' || value.value === '%%user.id';
    const otherText = subject.type === 'partition' ? value.value : subject.key;
    let data: Record<string, unknown> | undefined;
    if (direct && userIdSide && partitionType === 'objectId' && subject.property) {
      data = { suggestion: '{"%%partition": {"%stringToOid": "%%user.id"}}', replaces: 'property', replaceRange: this.range(subject.property) };
    } else if (subject.type === 'partition' && typeof otherText === 'string' && literalConversion(partitionType, otherText)) {
      data = { suggestion: JSON.stringify(literalConversion(partitionType, otherText)), replaces: 'value', replaceRange: this.range(value) };
    }
    const shown = typeof otherText === 'string' && isExpansion(otherText) ? `'${otherText}'` : `a ${other}`;
    this.report(value, 'warning', 'rule/type-never-equal',
      `The partition key type is ${partitionType}, so '%%partition' never equals ${shown}: this condition is never true.`
      + (data ? ` Write ${data.suggestion as string} instead.` : ''), data);
  }

  private tooDeep(node: JsonNode, depth: number): boolean {
    if (depth <= MAX_EXPRESSION_DEPTH) return false;
    if (!this.reportedTooDeep) {
      this.reportedTooDeep = true;
      this.report(node, 'error', 'rule/too-deep', `The expression is nested more than ${MAX_EXPRESSION_DEPTH} levels deep.`);
    }
    return true;
  }

  private range(node: JsonNode): Range {
    return this.file.rangeOf(node.offset, node.length);
  }

  private report(node: JsonNode, severity: Severity, code: string, message: string, data?: Record<string, unknown>): void {
    this.sink.atRange(this.file, this.range(node), severity, code, message, data);
  }
}

function isOperatorKey(key: string): boolean {
  return (key.startsWith('$') || key.startsWith('%')) && !isExpansion(key);
}

function staticTypeOfExpansion(text: string): StaticType {
  return text === '%%partition' ? 'partition' : text === '%%user.id' ? 'string' : 'unknown';
}

function staticTypeOfNode(node: JsonNode): StaticType {
  switch (node.type) {
    case 'string': return isExpansion(node.value) ? staticTypeOfExpansion(node.value) : 'string';
    case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'null': return 'null';
    default: return 'unknown';
  }
}

function compatible(partitionType: PartitionKeyType, type: StaticType): boolean {
  if (type === 'unknown' || type === 'null' || type === 'partition') return true;
  return (partitionType === 'string' && type === 'string') || (partitionType === 'long' && type === 'number');
}

/** The conversion that turns a string literal into a value of the partition's type, when the literal fits. */
function literalConversion(partitionType: PartitionKeyType, text: string): Record<string, string> | undefined {
  if (partitionType === 'objectId' && /^[0-9a-fA-F]{24}$/.test(text)) return { '%stringToOid': text };
  if (partitionType === 'uuid' && /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(text)) return { '%stringToUuid': text };
  return undefined;
}

function describe(node: JsonNode): string {
  switch (node.type) {
    case 'object': return 'an object';
    case 'array': return 'an array';
    case 'string': return 'a string';
    case 'number': return 'a number';
    case 'boolean': return 'a boolean';
    default: return 'null';
  }
}

function toSet(names: Iterable<string> | undefined): ReadonlySet<string> | undefined {
  return names === undefined ? undefined : new Set(names);
}
