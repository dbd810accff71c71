// The GraphQL endpoint (graphql.md §11): request body checks, a bounded cache of parsed and validated
// documents keyed by query text, operations compiled once with graphql-jit (graphql-js `execute` where jit
// cannot compile), and the response envelope. Authentication happens before `execute`: the caller passes the
// authenticated user, and every data access and function call of the request runs as that user.
import {
  execute as executeWithGraphqlJs, getOperationAST, getVariableValues, GraphQLError, GraphQLScalarType, GraphQLSchema,
  isLeafType, isScalarType, Kind, NoSchemaIntrospectionCustomRule, parse, specifiedRules, validate, visit,
  type DocumentNode, type ExecutionResult, type FragmentDefinitionNode, type GraphQLEnumType, type NonNullTypeNode,
  type OperationDefinitionNode, type SelectionSetNode, type ValidationRule, type VariableDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import type { GeneratedSchema } from '../../core/graphql';
import { RequestContext, type CollectionFor, type ExecutionEnvironment, type RunFunction } from './context';
import { toErrorEntry, type GraphqlErrorEntry } from './errors';
import { buildRuntimeModel } from './model';
import { buildExecutableSchema } from './resolvers';
import { BSON_UNDEFINED } from './values';

export interface GraphqlLimits {
  /** Deepest nesting of fields an operation may select (`{ tasks { assignee { name } } }` is 3). */
  maxQueryDepth: number;
  /** Largest request body `executeRaw` accepts. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Distinct query texts kept parsed, validated and compiled. Default 500. */
  documentCacheSize?: number;
  /** Most tokens a query text may have (`parse`'s `maxTokens`). Default 20,000. */
  maxTokens?: number;
  /** Deepest nesting of braces, brackets and parentheses in a query text, and of objects and arrays in its variables. Default 128. */
  maxNesting?: number;
  /** Most field selections an operation may expand to, fragments spread where they are used (aliases count each). Default 2,000. */
  maxFields?: number;
  /** Most field selections at an operation's root, fragments spread. Default 100. */
  maxRootFields?: number;
  /** Most function calls (custom resolvers) one request may start. Default 1,000 (a computed field over a few lists of 100). */
  maxFunctionCalls?: number;
}

export interface GraphqlEndpointOptions<User> {
  generated: GeneratedSchema;
  collectionFor: CollectionFor<User>;
  runFunction: RunFunction<User>;
  /** The app's `disable_schema_introspection`. */
  disableIntrospection?: boolean;
  limits: GraphqlLimits;
}

export interface GraphqlResponseBody {
  /** Always present (graphql.md §11): null when the request failed. */
  data: Record<string, unknown> | null;
  errors?: GraphqlErrorEntry[];
}

export interface GraphqlResponse {
  status: number;
  body: GraphqlResponseBody;
}

export interface GraphqlEndpointStats {
  /** Query texts parsed and validated (cache misses). */
  parsed: number;
  /** Operations compiled with graphql-jit. */
  compiled: number;
  /** Requests answered from a cached document. */
  cacheHits: number;
}

export interface GraphqlEndpoint<User> {
  /**
   * Executes an already parsed JSON body `{query, variables?, operationName?, extensions?}` as `user`.
   * Once `clientGone()` is true (the client left), no further data access or function call starts.
   */
  execute(body: unknown, user: User, clientGone?: () => boolean): Promise<GraphqlResponse>;
  /** Checks the size of a raw JSON body, parses it and executes it. */
  executeRaw(raw: string | Uint8Array, user: User, clientGone?: () => boolean): Promise<GraphqlResponse>;
  readonly stats: Readonly<GraphqlEndpointStats>;
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_DOCUMENT_CACHE_SIZE = 500;
/** Query texts longer than this are parsed for each request, never kept: real queries are far smaller. */
export const MAX_CACHED_QUERY_CHARS = 64 * 1024;
/** Query text all cached documents together may keep (a document's parsed form grows with its text). */
export const MAX_CACHED_QUERY_TEXT_CHARS = 4 * 1024 * 1024;
const DEFAULT_MAX_TOKENS = 20_000;
const DEFAULT_MAX_NESTING = 128;
const DEFAULT_MAX_FIELDS = 2_000;
const DEFAULT_MAX_ROOT_FIELDS = 100;
const DEFAULT_MAX_FUNCTION_CALLS = 1_000;

type Executor = (context: RequestContext<unknown>, variables: Record<string, unknown>) => Promise<ExecutionResult> | ExecutionResult;

interface CachedDocument {
  document?: DocumentNode;
  /** Syntax or validation errors: the document never executes. */
  errors?: GraphqlErrorEntry[];
  /** By operation name ('' for none). */
  executors: Map<string, Executor>;
}

export function createGraphqlEndpoint<User>(options: GraphqlEndpointOptions<User>): GraphqlEndpoint<User> {
  const model = buildRuntimeModel(options.generated);
  const schema = buildExecutableSchema(model);
  const env: ExecutionEnvironment<User> = { model, collectionFor: options.collectionFor, runFunction: options.runFunction };
  const maxBodyBytes = options.limits.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxTokens = options.limits.maxTokens ?? DEFAULT_MAX_TOKENS;
  const maxNesting = options.limits.maxNesting ?? DEFAULT_MAX_NESTING;
  const maxFields = options.limits.maxFields ?? DEFAULT_MAX_FIELDS;
  const maxRootFields = options.limits.maxRootFields ?? DEFAULT_MAX_ROOT_FIELDS;
  const maxFunctionCalls = options.limits.maxFunctionCalls ?? DEFAULT_MAX_FUNCTION_CALLS;
  const rules: ValidationRule[] = [...specifiedRules, depthLimitRule(options.limits.maxQueryDepth)];
  if (options.disableIntrospection) rules.push(NoSchemaIntrospectionCustomRule);
  const cache = new LruCache<CachedDocument>(options.limits.documentCacheSize ?? DEFAULT_DOCUMENT_CACHE_SIZE, MAX_CACHED_QUERY_TEXT_CHARS);
  const stats: GraphqlEndpointStats = { parsed: 0, compiled: 0, cacheHits: 0 };
  const customSerializers = bsonUndefinedSerializers(schema);
  let passThroughSchema: GraphQLSchema | undefined;
  const jitSchema = () => (passThroughSchema ??= withPassThroughScalar(schema));

  const documentFor = (query: string): CachedDocument => {
    const cached = cache.get(query);
    if (cached) {
      stats.cacheHits++;
      return cached;
    }
    stats.parsed++;
    let entry: CachedDocument;
    try {
      // Bounded before anything recursive or exponential sees the document: parsing and validation
      // recurse with its nesting, and compiling expands every fragment where it is spread.
      const nesting = textNesting(query);
      if (nesting > maxNesting) throw new GraphQLError(`The query nests braces, brackets or parentheses ${nesting} levels deep; the limit is ${maxNesting}.`);
      const document = parse(query, { maxTokens });
      const tooLarge = expansionProblem(document, maxFields, maxRootFields);
      const errors = tooLarge ? [tooLarge] : validate(schema, document, rules);
      entry = errors.length > 0 ? { errors: errors.map(toErrorEntry), executors: new Map() } : { document, executors: new Map() };
    } catch (error) {
      entry = { errors: [toErrorEntry(error instanceof GraphQLError ? error : new GraphQLError(`The query could not be read: ${(error as Error).message}`))], executors: new Map() };
    }
    if (query.length <= MAX_CACHED_QUERY_CHARS) cache.set(query, entry);
    return entry;
  };

  const executorFor = (entry: CachedDocument, document: DocumentNode, operationName: string | undefined): Executor => {
    const key = operationName ?? '';
    const existing = entry.executors.get(key);
    if (existing) return existing;
    const operation = getOperationAST(document, operationName) ?? undefined;
    const coerceFirst = operation !== undefined && (operation.variableDefinitions ?? []).length > 0;
    const withGraphqlJs: Executor = (context, variableValues) =>
      executeWithGraphqlJs({ schema, document, contextValue: context, variableValues, operationName });
    let executor: Executor;
    if (coerceFirst && usesIntrospection(document)) {
      // The jit schema carries an extra scalar that introspection would show.
      executor = withGraphqlJs;
    } else {
      try {
        const compiled = coerceFirst
          ? compileQuery(jitSchema(), withPassThroughVariables(document, operation!), operationName, { customSerializers })
          : compileQuery(schema, document, operationName, { customSerializers });
        // An unknown or ambiguous operation name comes back as an error result; it is not worth caching.
        if (!isCompiledQuery(compiled)) return () => compiled;
        stats.compiled++;
        if (coerceFirst) {
          const definitions = operation!.variableDefinitions ?? [];
          const coerceLeaves = leafVariableCoercion(schema, definitions);
          executor = (context, variables) => {
            const quick = coerceLeaves?.(variables);
            if (quick) return compiled.query(undefined, context, quick);
            const coerced = getVariableValues(schema, definitions, variables, { maxErrors: 20 });
            return coerced.errors ? { errors: coerced.errors } : compiled.query(undefined, context, coerced.coerced);
          };
        } else {
          executor = (context, variables) => compiled.query(undefined, context, variables);
        }
      } catch {
        executor = withGraphqlJs;
      }
    }
    entry.executors.set(key, executor);
    return executor;
  };

  const execute = async (body: unknown, user: User, clientGone?: () => boolean): Promise<GraphqlResponse> => {
    const request = readRequest(body);
    if ('problem' in request) return failure(400, request.problem);
    if (nestedDeeperThan(request.variables, maxNesting)) return failure(400, `"variables" nest objects or arrays more than ${maxNesting} levels deep.`);
    const entry = documentFor(request.query);
    if (entry.errors) return { status: 200, body: { data: null, errors: entry.errors } };
    const executor = executorFor(entry, entry.document!, request.operationName);
    const context = new RequestContext(user, env, { maxFunctionCalls, clientGone }) as RequestContext<unknown>;
    const result = await executor(context, request.variables);
    // Any failure, whether a resolver, a rule or validation, nulls the whole result (graphql.md §11).
    if (result.errors && result.errors.length > 0) return { status: 200, body: { data: null, errors: result.errors.map(toErrorEntry) } };
    return { status: 200, body: { data: (result.data ?? null) as Record<string, unknown> | null } };
  };

  return {
    execute,
    async executeRaw(raw, user, clientGone) {
      const size = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.byteLength;
      if (size > maxBodyBytes) return failure(413, `The request body is ${size} bytes; GraphQL requests are limited to ${maxBodyBytes} bytes.`);
      const text = typeof raw === 'string' ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
      if (text.trim() === '') return failure(400, 'The request body is empty; send a JSON object with a "query" string.');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (error) {
        return failure(400, `The request body is not valid JSON: ${(error as Error).message}`);
      }
      return execute(body, user, clientGone);
    },
    get stats() { return stats; },
  };
}

function failure(status: number, message: string): GraphqlResponse {
  return { status, body: { data: null, errors: [{ message }] } };
}

type ParsedRequest = { query: string; variables: Record<string, unknown>; operationName?: string } | { problem: string };

const isMap = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** GraphQL-over-HTTP parameter rules: `query` a string; `variables` and `extensions` maps; `operationName` a string; null means absent. */
function readRequest(body: unknown): ParsedRequest {
  if (!isMap(body)) return { problem: 'The request body must be a JSON object with a "query" string.' };
  const { query, variables, operationName, extensions } = body;
  if (query === undefined || query === null) return { problem: 'The request has no "query"; send the operation text as a string.' };
  if (typeof query !== 'string') return { problem: `"query" must be a string, not ${describeJsonType(query)}.` };
  if (variables !== undefined && variables !== null && !isMap(variables)) return { problem: `"variables" must be an object, not ${describeJsonType(variables)}.` };
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    return { problem: `"operationName" must be a string, not ${describeJsonType(operationName)}.` };
  }
  if (extensions !== undefined && extensions !== null && !isMap(extensions)) return { problem: `"extensions" must be an object, not ${describeJsonType(extensions)}.` };
  return { query, variables: (variables as Record<string, unknown> | null | undefined) ?? {}, operationName: operationName ?? undefined };
}

/**
 * The deepest nesting of `{`, `[` and `(` in a query text, outside strings and comments: a linear scan,
 * so that a document too deep for the recursive parser and validation is refused before either runs.
 */
export function textNesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth = Math.max(0, depth - 1);
    } else if (c === 0x23) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a && text.charCodeAt(i) !== 0x0d) i++;
    } else if (c === 0x22) {
      if (text.startsWith('"""', i)) {
        i += 3;
        while (i < text.length && !(text.startsWith('"""', i) && text.charCodeAt(i - 1) !== 0x5c)) i++;
        i += 2;
      } else {
        for (i++; i < text.length && text.charCodeAt(i) !== 0x22 && text.charCodeAt(i) !== 0x0a; i++) if (text.charCodeAt(i) === 0x5c) i++;
      }
    }
  }
  return deepest;
}

/** Whether `value` nests objects or arrays more than `max` levels deep (recursing at most `max` levels). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max <= 0) return true;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (nestedDeeperThan(child, max - 1)) return true;
  return false;
}

/**
 * Counts the field selections each operation expands to, every fragment counted where it is spread (a
 * fragment spreading another twice doubles: 40 such fragments in 2 KB expand to 2^40 fields), and names
 * the first operation above the limits. Each fragment's count is computed once, so the count is linear
 * in the document's size whatever it expands to.
 */
export function expansionProblem(document: DocumentNode, maxFields: number, maxRootFields: number): GraphQLError | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const counted = new Map<string, { root: number; total: number }>();
  const visiting = new Set<string>();
  const count = (selectionSet: SelectionSetNode): { root: number; total: number } => {
    let root = 0;
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        root += 1;
        total += 1 + (selection.selectionSet ? count(selection.selectionSet).total : 0);
        continue;
      }
      let inner: { root: number; total: number } | undefined;
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        inner = count(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        // Unknown fragments and cycles are validation's to report; here they only must not recurse forever.
        if (!fragment || visiting.has(name)) continue;
        inner = counted.get(name);
        if (!inner) {
          visiting.add(name);
          inner = count(fragment.selectionSet);
          visiting.delete(name);
          counted.set(name, inner);
        }
      }
      root += inner.root;
      total += inner.total;
    }
    return { root, total };
  };
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const { root, total } = count(definition.selectionSet);
    const name = definition.name ? ` "${definition.name.value}"` : '';
    if (root > maxRootFields) {
      return new GraphQLError(`The operation${name} selects ${root} fields at its root (aliases and fragments counted); the limit is ${maxRootFields}.`, { nodes: definition });
    }
    if (total > maxFields) {
      const amount = total > 1e15 ? total.toExponential(2) : String(total);
      return new GraphQLError(`The operation${name} expands to ${amount} field selections (aliases and fragments counted where they are used); the limit is ${maxFields}.`, { nodes: definition });
    }
  }
  return undefined;
}

function describeJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Rejects operations nesting fields deeper than `max`; fragments count where they are spread. */
export function depthLimitRule(max: number): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    const fragmentDepths = new Map<string, number>();
    const depthOf = (selectionSet: SelectionSetNode, visiting: Set<string>): number => {
      let deepest = 0;
      for (const selection of selectionSet.selections) {
        let depth = 0;
        if (selection.kind === Kind.FIELD) {
          depth = 1 + (selection.selectionSet ? depthOf(selection.selectionSet, visiting) : 0);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          depth = depthOf(selection.selectionSet, visiting);
        } else {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          // Cycles are reported by NoFragmentCyclesRule; here they only must not recurse forever.
          if (!fragment || visiting.has(name)) continue;
          let known = fragmentDepths.get(name);
          if (known === undefined) {
            visiting.add(name);
            known = depthOf(fragment.selectionSet, visiting);
            visiting.delete(name);
            fragmentDepths.set(name, known);
          }
          depth = known;
        }
        deepest = Math.max(deepest, depth);
      }
      return deepest;
    };
    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, new Set());
        if (depth > max) {
          const name = node.name ? ` "${node.name.value}"` : '';
          context.reportError(new GraphQLError(`The operation${name} nests fields ${depth} levels deep; the limit is ${max}.`, { nodes: node }));
        }
      },
    };
  };
}

// Variables are coerced by graphql-js for every operation that declares any, and jit compiles a copy of
// the operation whose variables are declared with a pass-through scalar that hands the coerced values on
// unchanged. Two reasons: graphql-jit 0.8 generates coercion code by inlining input types, which never ends
// for the generated QueryInputs (they contain themselves through AND/OR); and one coercion path gives one
// wording of variable errors (the scalars' own reasons) whatever the variables' types.
const PASS_THROUGH_SCALAR = '__CoercedVariable';

function withPassThroughScalar(schema: GraphQLSchema): GraphQLSchema {
  const config = schema.toConfig();
  const passThrough = new GraphQLScalarType({ name: PASS_THROUGH_SCALAR, parseValue: (value) => value, serialize: (value) => value });
  return new GraphQLSchema({ ...config, types: [...config.types, passThrough] });
}

function withPassThroughVariables(document: DocumentNode, operation: OperationDefinitionNode): DocumentNode {
  const passThrough = { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: PASS_THROUGH_SCALAR } } as const;
  const rewritten: OperationDefinitionNode = {
    ...operation,
    variableDefinitions: (operation.variableDefinitions ?? []).map((definition) => ({ ...definition, type: passThrough, defaultValue: undefined })),
  };
  return { ...document, definitions: document.definitions.map((definition) => (definition === operation ? rewritten : definition)) };
}

/**
 * For operations whose variables are all scalars or enums (possibly non-null) without defaults, the
 * common case: coercion is each type's own `parseValue`, as graphql-js applies it. Returns undefined
 * (and graphql-js coerces, reporting errors in its words) for any value that is missing, null where
 * it may not be, or refused by `parseValue`.
 */
export function leafVariableCoercion(
  schema: GraphQLSchema, definitions: readonly VariableDefinitionNode[],
): ((variables: Record<string, unknown>) => Record<string, unknown> | undefined) | undefined {
  const leaves: { name: string; type: GraphQLScalarType | GraphQLEnumType; nonNull: boolean }[] = [];
  for (const definition of definitions) {
    if (definition.defaultValue) return undefined;
    const nonNull = definition.type.kind === Kind.NON_NULL_TYPE;
    const named = nonNull ? (definition.type as NonNullTypeNode).type : definition.type;
    if (named.kind !== Kind.NAMED_TYPE) return undefined;
    const type = schema.getType(named.name.value);
    if (!isLeafType(type)) return undefined;
    leaves.push({ name: definition.variable.name.value, type, nonNull });
  }
  return (variables) => {
    const coerced: Record<string, unknown> = {};
    for (const { name, type, nonNull } of leaves) {
      const value = variables[name];
      if (value === undefined) {
        if (nonNull || Object.hasOwn(variables, name)) return undefined;
        continue;
      }
      if (value === null) {
        if (nonNull) return undefined;
        coerced[name] = null;
        continue;
      }
      let parsed: unknown;
      try {
        parsed = type.parseValue(value);
      } catch {
        return undefined;
      }
      if (parsed === undefined) return undefined;
      coerced[name] = parsed;
    }
    return coerced;
  };
}

function usesIntrospection(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (node.name.value === '__schema' || node.name.value === '__type') found = true;
    },
  });
  return found;
}

/** graphql-jit serialisers that serve a stored BSON `undefined` as `{}` (graphql.md §3) for every scalar. */
function bsonUndefinedSerializers(schema: GraphQLSchema): Record<string, (value: unknown) => unknown> {
  const serializers: Record<string, (value: unknown) => unknown> = {};
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isScalarType(type)) continue;
    serializers[type.name] = (value) => (value === BSON_UNDEFINED ? {} : type.serialize(value));
  }
  return serializers;
}

/**
 * Entries not used lately leave first (second chance): a hit only marks its entry, and a full cache
 * evicts the oldest unmarked entry, giving marked ones another round. A hit costs one lookup, which
 * matters as every request looks its query up. Full: more than `capacity` entries, or keys longer than
 * `maxKeyChars` together.
 */
class LruCache<V> {
  private readonly entries = new Map<string, { value: V; used: boolean }>();
  private readonly capacity: number;
  private keyChars = 0;
  constructor(capacity: number, private readonly maxKeyChars: number) {
    this.capacity = Math.max(1, capacity);
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    entry.used = true;
    return entry.value;
  }

  set(key: string, value: V): void {
    if (!this.entries.delete(key)) this.keyChars += key.length;
    this.entries.set(key, { value, used: false });
    while (this.entries.size > this.capacity || this.keyChars > this.maxKeyChars) {
      const [oldest, entry] = this.entries.entries().next().value as [string, { value: V; used: boolean }];
      this.entries.delete(oldest);
      // A used entry goes round again, unmarked; the entry just added is never the one to leave.
      if (entry.used || oldest === key) this.entries.set(oldest, { value: entry.value, used: false });
      else this.keyChars -= oldest.length;
    }
  }
}
