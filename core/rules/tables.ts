// The vocabulary of the rule expression language (rules-and-sync §1): expansions, operators and where
// each may be used. Analysis, evaluation, completion and hover all read these tables, so a new
// expansion or operator is added in one place.

/** Where an expression is written; decides which expansions and operators are meaningful (§1.5). */
export type ExpressionContext =
  /** `sync/config.json` → `partition.permissions.read` / `.write`. */
  | 'partition-sync'
  /** Flexible-sync role conditions (`apply_when`); their `document_filters` are queries: use 'filter'. */
  | 'flexible-sync'
  /** Data-access roles: `apply_when`, `read`, `write`, field rules. Bare keys mean `%%root.<field>`. */
  | 'data-rule'
  /** A function's `can_evaluate`. Bare keys mean `%%args.<field>`. */
  | 'can-evaluate'
  /** Data-access filters and `document_filters`: MongoDB queries whose values may hold expansions. */
  | 'filter';

export const EXPRESSION_CONTEXTS: readonly ExpressionContext[] = ['partition-sync', 'flexible-sync', 'data-rule', 'can-evaluate', 'filter'];

export const CONTEXT_TITLES: Record<ExpressionContext, string> = {
  'partition-sync': 'partition-based sync permissions',
  'flexible-sync': 'flexible sync rules',
  'data-rule': 'data access rules',
  'can-evaluate': 'function can_evaluate',
  filter: 'data access filters',
};

export type PartitionKeyType = 'string' | 'objectId' | 'long' | 'uuid';

/** What may follow an expansion's name. */
export type ExpansionPath =
  /** Nothing: `%%partition`, `%%true`. */
  | 'none'
  /** Only the listed members, each possibly with a deeper path. */
  | 'members'
  /** Any path: `%%root.owner.name`. */
  | 'any'
  /** A required name, then any path: `%%values.adminIds`. */
  | 'name';

export interface MemberInfo {
  name: string;
  description: string;
  /** Whether a path may continue below this member (`%%user.custom_data.team`). */
  deeper: boolean;
}

export interface ExpansionInfo {
  /** The name after `%%`. */
  name: string;
  /** The full spelling: `%%user`. */
  label: string;
  description: string;
  path: ExpansionPath;
  /** Known members, for validation ('members') or for completion only ('any'). */
  members: readonly MemberInfo[];
  allowedIn: readonly ExpressionContext[];
}

const EVERYWHERE = EXPRESSION_CONTEXTS;
const NOT_IN_SYNC: readonly ExpressionContext[] = ['data-rule', 'can-evaluate', 'filter'];
const DATA_RULES_ONLY: readonly ExpressionContext[] = ['data-rule'];

export const EXPANSIONS: readonly ExpansionInfo[] = [
  {
    name: 'user', label: '%%user', path: 'members', allowedIn: EVERYWHERE,
    description: 'The user making the request: `{id, type, data, custom_data, identities}`.',
    members: [
      { name: 'id', deeper: false, description: "The user's id: a 24-character hex string." },
      { name: 'type', deeper: false, description: '`normal`, or `server` for API-key users.' },
      { name: 'data', deeper: true, description: 'Metadata from the authentication provider (name, email, …).' },
      { name: 'custom_data', deeper: true, description: "The user's custom user data document." },
      { name: 'identities', deeper: true, description: 'The identities linked to the user, each with `id` and `provider_type`.' },
    ],
  },
  {
    name: 'partition', label: '%%partition', path: 'none', allowedIn: ['partition-sync'],
    description: 'The partition value the client opened: string, number, ObjectId or UUID. Partition-based sync permissions only.',
    members: [],
  },
  {
    name: 'root', label: '%%root', path: 'any', allowedIn: DATA_RULES_ONLY, members: [],
    description: 'The whole document after the write (or as stored, for reads). Data rules only.',
  },
  {
    name: 'prevRoot', label: '%%prevRoot', path: 'any', allowedIn: DATA_RULES_ONLY, members: [],
    description: 'The whole document before the write; undefined for inserts. Data rules only.',
  },
  {
    name: 'this', label: '%%this', path: 'any', allowedIn: DATA_RULES_ONLY, members: [],
    description: 'The value of the field the rule is on, after the write. Data rules only.',
  },
  {
    name: 'prev', label: '%%prev', path: 'any', allowedIn: DATA_RULES_ONLY, members: [],
    description: 'The value of the field the rule is on, before the write. Data rules only.',
  },
  {
    name: 'values', label: '%%values', path: 'name', allowedIn: EVERYWHERE, members: [],
    description: 'An app value by name (`%%values.<name>`); secret-backed values are resolved.',
  },
  {
    name: 'environment', label: '%%environment', path: 'members', allowedIn: EVERYWHERE,
    description: 'The current environment: `{tag, values}`.',
    members: [
      { name: 'tag', deeper: false, description: 'The environment name: `development`, `testing`, `qa`, `production` or empty.' },
      { name: 'values', deeper: true, description: "The environment's values (`%%environment.values.<name>`)." },
    ],
  },
  {
    name: 'request', label: '%%request', path: 'any', allowedIn: NOT_IN_SYNC,
    description: 'The incoming request. Not available in sync.',
    members: [
      { name: 'httpMethod', deeper: false, description: 'The HTTP method.' },
      { name: 'httpReferrer', deeper: false, description: 'The Referer header.' },
      { name: 'httpUserAgent', deeper: false, description: 'The User-Agent header.' },
      { name: 'rawQueryString', deeper: false, description: 'The query string.' },
      { name: 'remoteIPAddress', deeper: false, description: "The client's IP address." },
      { name: 'requestHeaders', deeper: true, description: 'The request headers by name.' },
      { name: 'service', deeper: false, description: 'The service being called.' },
      { name: 'action', deeper: false, description: 'The service action being called.' },
      { name: 'webhookUrl', deeper: false, description: 'The URL of the webhook or endpoint called.' },
    ],
  },
  {
    name: 'args', label: '%%args', path: 'any', allowedIn: ['can-evaluate', 'filter'], members: [],
    description: 'The arguments of the call being checked (service rules, function `can_evaluate`).',
  },
  { name: 'true', label: '%%true', path: 'none', allowedIn: EVERYWHERE, members: [], description: 'The constant `true`.' },
  { name: 'false', label: '%%false', path: 'none', allowedIn: EVERYWHERE, members: [], description: 'The constant `false`.' },
];

export const EXPANSIONS_BY_NAME: ReadonlyMap<string, ExpansionInfo> = new Map(EXPANSIONS.map((e) => [e.name, e]));

/** What an operator expects as its operand. */
export type OperandShape =
  /** Any literal or expansion. */
  | 'value'
  /** An array, or an expansion that yields one. */
  | 'array-or-expansion'
  /** `true` / `false`. */
  | 'boolean'
  /** A literal or a single expansion; no nested operators. */
  | 'literal-or-expansion'
  /** `{name: string, arguments?: [...]}`. */
  | 'function-call'
  /** A non-empty array of expressions (or of conditions, inside an operator object). */
  | 'array'
  /** One expression (or condition). */
  | 'expression'
  /** A MongoDB query operand, passed to the query engine as written. */
  | 'query';

export type OperatorKind = 'comparison' | 'membership' | 'presence' | 'conversion' | 'function' | 'logical' | 'negation' | 'query';

export interface OperatorInfo {
  name: string;
  kind: OperatorKind;
  operand: OperandShape;
  description: string;
  /** Example for hover. */
  example: string;
  /** False for operators the platform accepts but does not document (§1.3): they get a warning. */
  documented: boolean;
  allowedIn: readonly ExpressionContext[];
}

function both(base: string, info: Omit<OperatorInfo, 'name'>): OperatorInfo[] {
  return [{ name: `%${base}`, ...info }, { name: `$${base}`, ...info }];
}

function comparison(name: string, meaning: string): OperatorInfo {
  return {
    name, kind: 'comparison', operand: 'value', documented: true, allowedIn: EVERYWHERE,
    description: `True when the subject is ${meaning} the operand (BSON-typed; the operand may be an expansion).`,
    example: `{"%%user.custom_data.level": {"${name}": 5}}`,
  };
}

export const OPERATORS: readonly OperatorInfo[] = [
  comparison('$eq', 'equal to'),
  comparison('$ne', 'not equal to'),
  comparison('$gt', 'greater than'),
  comparison('$gte', 'greater than or equal to'),
  comparison('$lt', 'less than'),
  comparison('$lte', 'less than or equal to'),
  ...both('in', {
    kind: 'membership', operand: 'array-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'True when the subject equals one of the listed values (an array, or an expansion that yields one).',
    example: '{"%%partition": {"$in": ["a", "b"]}}',
  }),
  ...both('nin', {
    kind: 'membership', operand: 'array-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'True when the subject equals none of the listed values (an array, or an expansion that yields one).',
    example: '{"%%user.id": {"$nin": "%%values.blockedUsers"}}',
  }),
  {
    name: '$exists', kind: 'presence', operand: 'boolean', documented: true, allowedIn: EVERYWHERE,
    description: '`true`: the subject has a value; `false`: it is absent.',
    example: '{"%%user.custom_data.team": {"$exists": true}}',
  },
  {
    name: '%stringToOid', kind: 'conversion', operand: 'literal-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'Converts a 24-character hex string to an ObjectId, then compares it with the subject.',
    example: '{"%%partition": {"%stringToOid": "%%user.id"}}',
  },
  {
    name: '%oidToString', kind: 'conversion', operand: 'literal-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'Converts an ObjectId to its hex string, then compares it with the subject.',
    example: '{"%%user.id": {"%oidToString": "%%root.owner_id"}}',
  },
  {
    name: '%stringToUuid', kind: 'conversion', operand: 'literal-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'Converts a 36-character UUID string to a UUID, then compares it with the subject.',
    example: '{"%%partition": {"%stringToUuid": "%%user.custom_data.teamId"}}',
  },
  {
    name: '%uuidToString', kind: 'conversion', operand: 'literal-or-expansion', documented: true, allowedIn: EVERYWHERE,
    description: 'Converts a UUID to its 36-character string, then compares it with the subject.',
    example: '{"%%user.custom_data.teamId": {"%uuidToString": "%%partition"}}',
  },
  {
    name: '%function', kind: 'function', operand: 'function-call', documented: true,
    allowedIn: ['partition-sync', 'data-rule', 'can-evaluate', 'filter'],
    description: 'Calls an app function with the given arguments and compares its return value with the subject.',
    example: '{"%%true": {"%function": {"name": "canRead", "arguments": ["%%partition"]}}}',
  },
  ...both('and', {
    kind: 'logical', operand: 'array', documented: true, allowedIn: EVERYWHERE,
    description: 'True when every listed expression (or condition on the subject) holds.',
    example: '{"%%user.custom_data.level": {"%and": [{"$gt": 0}, {"$lte": 42}]}}',
  }),
  ...both('or', {
    kind: 'logical', operand: 'array', documented: true, allowedIn: EVERYWHERE,
    description: 'True when any listed expression (or condition on the subject) holds.',
    example: '{"$or": [{"%%user.id": "%%partition"}, {"%%partition": "PUBLIC"}]}',
  }),
  ...both('nor', {
    kind: 'logical', operand: 'array', documented: false, allowedIn: EVERYWHERE,
    description: 'True when none of the listed expressions (or conditions on the subject) holds. Undocumented.',
    example: '{"%nor": [{"%%user.type": "server"}]}',
  }),
  ...both('not', {
    kind: 'negation', operand: 'expression', documented: false, allowedIn: EVERYWHERE,
    description: 'True when the expression (or condition on the subject) does not hold. Undocumented.',
    example: '{"%%partition": {"%not": {"$in": ["admin"]}}}',
  }),
  ...[
    ['$regex', 'Matches strings against a regular expression.'],
    ['$options', 'Flags of `$regex`.'],
    ['$all', 'The array field holds every listed value.'],
    ['$elemMatch', 'An element of the array field matches the query.'],
    ['$size', 'The array field has this many elements.'],
    ['$type', 'The field has this BSON type.'],
    ['$mod', 'The number field divided by the divisor leaves the remainder.'],
    ['$expr', 'An aggregation expression over the document.'],
    ['$comment', 'A comment; ignored.'],
  ].map(([name, description]): OperatorInfo => ({
    name, kind: 'query', operand: 'query', documented: true, allowedIn: ['filter'],
    description: `MongoDB query operator: ${description}`, example: '',
  })),
];

export const OPERATORS_BY_NAME: ReadonlyMap<string, OperatorInfo> = new Map(OPERATORS.map((o) => [o.name, o]));

/** The MongoDB query operators that stand where a field name would (`{"$expr": …}`), allowed in filters. */
export const TOP_LEVEL_QUERY_OPERATORS: ReadonlySet<string> = new Set(['$expr', '$comment']);

/** MongoDB's own `$not`/`$nor` are ordinary in queries; only the rule-language forms are undocumented. */
export function isUndocumentedIn(op: OperatorInfo, context: ExpressionContext): boolean {
  return !op.documented && !(context === 'filter' && op.name.startsWith('$'));
}

/** Cross-check inputs the analysis cannot know by itself; an undefined field skips its check. */
export interface ExpressionFacts {
  /** Names of the app's functions, for `%function`. */
  functionNames?: Iterable<string>;
  /** `partition.type` of partition-based sync. */
  partitionType?: PartitionKeyType;
  /** Top-level field names of the custom user data documents (schema `properties`), when known. */
  customDataFields?: Iterable<string>;
  /** Names of the app's values, for `%%values.<name>`. */
  valueNames?: Iterable<string>;
  /** Names of the environment values, for `%%environment.values.<name>`. */
  environmentValueNames?: Iterable<string>;
}
