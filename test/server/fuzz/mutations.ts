// Mutations of a JSON file's text. A mutation is plain data (what fast-check generates and shrinks);
// `applyMutation` resolves it against the current text, so offsets and node picks are taken modulo what
// the text has and every mutation applies to every text, even one that earlier mutations broke.
import fc from 'fast-check';
import { parseTree, type JSONPath, type Node } from 'jsonc-parser';
import {
  bsonTypeText, deepValueText, expressionText, jsonText, keyArbitrary, longStringText, longValueText, objectText,
  PROTOTYPE_KEYS, unicodeString, valuesOfEachType, type JsonType, JSON_TYPES,
} from './values';

/** Which nodes a mutation may pick. */
export type NodePool = 'value' | 'expression' | 'bsonType' | 'string' | 'object' | 'member';

export type MutationFamily = 'truncate' | 'span' | 'remove-member' | 'retype' | 'swap-value' | 'random-key' | 'expression' | 'bsonType' | 'unicode' | 'long' | 'deep';

export type Mutation = { family: MutationFamily } & (
  | { kind: 'truncate'; at: number }
  | { kind: 'delete-span'; at: number; length: number }
  | { kind: 'duplicate-span'; at: number; length: number; to: number }
  | { kind: 'insert-text'; at: number; text: string }
  | { kind: 'replace-node'; pool: NodePool; pick: number; text: string }
  /** Replaces a node with the first of `candidates`, from `start` on, whose type differs from the node's. */
  | { kind: 'retype-node'; pool: NodePool; pick: number; candidates: Record<JsonType, string>; start: number }
  | { kind: 'insert-key'; pick: number; key: string; text: string }
  /** Removes a property or array element with its comma, leaving valid JSON valid. */
  | { kind: 'remove-member'; pick: number }
);

/** Keys under which the app's files hold rule expressions (sync permissions, roles, filters, can_evaluate). */
const EXPRESSION_KEYS = new Set(['apply_when', 'document_filters', 'read', 'write', 'query', 'can_evaluate', 'permissions', 'filters', 'fields', 'additional_fields', 'insert', 'delete', 'search']);

export type NodePools = Record<NodePool, Node[]>;

/** The nodes of a (possibly broken) JSON text, grouped by what mutations pick them for. */
export function nodePools(text: string): NodePools {
  const pools: NodePools = { value: [], expression: [], bsonType: [], string: [], object: [], member: [] };
  const root = parseTree(text, [], { allowTrailingComma: true });
  function visit(node: Node, path: JSONPath): void {
    if (node.type === 'property' || node.parent?.type === 'array') pools.member.push(node);
    if (node.type === 'property') {
      const [key, value] = node.children ?? [];
      if (key) pools.string.push(key);
      if (value) visit(value, [...path, String(key?.value)]);
      return;
    }
    pools.value.push(node);
    if (node.type === 'string') pools.string.push(node);
    if (node.type === 'object') pools.object.push(node);
    if (path.some((p) => typeof p === 'string' && EXPRESSION_KEYS.has(p))) pools.expression.push(node);
    const last = path[path.length - 1], beforeLast = path[path.length - 2];
    if (last === 'bsonType' || (typeof last === 'number' && beforeLast === 'bsonType')) pools.bsonType.push(node);
    node.children?.forEach((child, i) => visit(child, node.type === 'array' ? [...path, i] : path));
  }
  if (root) visit(root, []);
  return pools;
}

function pickNode(pools: NodePools, pool: NodePool, pick: number): Node | undefined {
  const nodes = pools[pool].length ? pools[pool] : pools.value;
  return nodes.length ? nodes[pick % nodes.length] : undefined;
}

const splice = (text: string, at: number, deleteCount: number, insert: string) => text.slice(0, at) + insert + text.slice(at + deleteCount);

export function applyMutation(text: string, m: Mutation): string {
  const at = (n: number) => n % (text.length + 1);
  switch (m.kind) {
    case 'truncate': return text.slice(0, at(m.at));
    case 'delete-span': return splice(text, at(m.at), m.length, '');
    case 'duplicate-span': {
      const start = at(m.at);
      return splice(text, at(m.to), 0, text.slice(start, start + m.length));
    }
    case 'insert-text': return splice(text, at(m.at), 0, m.text);
    case 'replace-node': {
      const node = pickNode(nodePools(text), m.pool, m.pick);
      return node ? splice(text, node.offset, node.length, m.text) : m.text;
    }
    case 'retype-node': {
      const node = pickNode(nodePools(text), m.pool, m.pick);
      const types = JSON_TYPES.filter((t) => t !== node?.type);
      const replacement = m.candidates[types[m.start % types.length]];
      return node ? splice(text, node.offset, node.length, replacement) : replacement;
    }
    case 'insert-key': {
      const objects = nodePools(text).object;
      if (!objects.length) return objectText([[m.key, m.text]]);
      const target = objects[m.pick % objects.length];
      const member = `${JSON.stringify(m.key)}: ${m.text}${target.children?.length ? ', ' : ''}`;
      return splice(text, target.offset + 1, 0, member);
    }
    case 'remove-member': {
      const members = nodePools(text).member;
      if (!members.length) return text;
      const node = members[m.pick % members.length];
      const siblings = node.parent?.children ?? [node];
      const i = siblings.indexOf(node);
      const next = siblings[i + 1], previous = siblings[i - 1];
      if (next) return splice(text, node.offset, next.offset - node.offset, '');
      if (previous) return splice(text, previous.offset + previous.length, node.offset + node.length - previous.offset - previous.length, '');
      return splice(text, node.offset, node.length, '');
    }
  }
}

/**
 * Every mutation family, weighted toward the ones that reach the checks' semantics. `keys` and `strings`
 * are the corpus's own keys and string values: swapping them around gives valid JSON that means
 * something wrong (a function name where a type is expected, a provider type as a partition type).
 */
export function mutationArbitrary(vocabulary: { keys: readonly string[]; strings: readonly string[] }): fc.Arbitrary<Mutation> {
  const key = keyArbitrary(vocabulary.keys);
  const offset = fc.nat();
  const spanLength = fc.integer({ min: 1, max: 200 });
  const replace = (family: MutationFamily, pool: fc.Arbitrary<NodePool>, text: fc.Arbitrary<string>): fc.Arbitrary<Mutation> =>
    fc.record({ pool, pick: fc.nat(), text }).map((r) => ({ family, kind: 'replace-node' as const, ...r }));
  const insertKey = (family: MutationFamily, keyText: fc.Arbitrary<string>, text: fc.Arbitrary<string>): fc.Arbitrary<Mutation> =>
    fc.record({ pick: fc.nat(), key: keyText, text }).map((r) => ({ family, kind: 'insert-key' as const, ...r }));
  return fc.oneof(
    { weight: 2, arbitrary: offset.map((at): Mutation => ({ family: 'truncate', kind: 'truncate', at })) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.record({ at: offset, length: spanLength }).map((r): Mutation => ({ family: 'span', kind: 'delete-span', ...r })),
        fc.record({ at: offset, length: spanLength, to: offset }).map((r): Mutation => ({ family: 'span', kind: 'duplicate-span', ...r })),
      ),
    },
    {
      weight: 3,
      arbitrary: fc.record({ pool: fc.constantFrom<NodePool>('value', 'value', 'expression', 'bsonType'), pick: fc.nat(), candidates: valuesOfEachType(key), start: fc.nat() })
        .map((r): Mutation => ({ family: 'retype', kind: 'retype-node', ...r })),
    },
    { weight: 2, arbitrary: fc.nat().map((pick): Mutation => ({ family: 'remove-member', kind: 'remove-member', pick })) },
    {
      weight: 3,
      arbitrary: replace('swap-value', fc.constantFrom<NodePool>('string', 'string', 'value'),
        fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...vocabulary.strings, ...vocabulary.keys) }, { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) }).map((s) => JSON.stringify(s))),
    },
    { weight: 2, arbitrary: fc.oneof(insertKey('random-key', key, jsonText), replace('random-key', fc.constant('string'), key.map((k) => JSON.stringify(k)))) },
    {
      weight: 4,
      arbitrary: fc.oneof(
        replace('expression', fc.constantFrom<NodePool>('expression', 'expression', 'value'), expressionText),
        insertKey('expression', fc.constantFrom('apply_when', 'read', 'write', 'can_evaluate', 'query', '%%user.id', '%and', '%function'), expressionText),
      ),
    },
    { weight: 2, arbitrary: fc.oneof(replace('bsonType', fc.constant('bsonType'), bsonTypeText), insertKey('bsonType', fc.constant('bsonType'), bsonTypeText)) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.record({ at: offset, text: unicodeString }).map((r): Mutation => ({ family: 'unicode', kind: 'insert-text', ...r })),
        replace('unicode', fc.constant('string'), unicodeString.map((s) => JSON.stringify(s))),
      ),
    },
    { weight: 1, arbitrary: fc.oneof(replace('long', fc.constantFrom<NodePool>('string', 'value', 'expression'), longValueText), insertKey('long', longStringText.map((s) => s.slice(1, -1)), jsonText)) },
    { weight: 1, arbitrary: replace('deep', fc.constantFrom<NodePool>('value', 'expression', 'bsonType'), deepValueText) },
  );
}
