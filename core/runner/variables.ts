// Variables of an operation: what the user typed per variable (JSON, or a bare word for a scalar), checked
// with graphql-js against the declared type (against the app's schema when there is one), and variables
// taken from `<file>.variables.json` keyed by operation name.
import { GraphQLError, coerceInputValue, isInputType, isNonNullType, parseType, typeFromAST, type GraphQLSchema, type TypeNode } from 'graphql';

export interface VariableDeclaration {
  name: string;
  /** As written: `[String!]!`. */
  type: string;
  defaultValue?: string;
  required: boolean;
}

export type ParsedInput = { ok: true; value: unknown } | { ok: false; message: string };

function baseTypeName(node: TypeNode): string {
  return node.kind === 'NamedType' ? node.name.value : baseTypeName(node.type);
}

const NON_STRING_SCALARS = new Set(['Int', 'Float', 'Boolean', 'Long']);

/**
 * One variable's input. Empty input is "not given" (fine unless required without default); JSON otherwise,
 * with a bare word accepted as a string for string-like scalars (`ObjectId`, `String`, `ID`, `DateTime`).
 */
export function parseVariableInput(declaration: VariableDeclaration, input: string, schema?: GraphQLSchema): ParsedInput {
  let typeNode: TypeNode;
  try { typeNode = parseType(declaration.type); } catch (e) { return { ok: false, message: `the type ${declaration.type} does not parse: ${(e as Error).message}` }; }
  const trimmed = input.trim();
  if (trimmed === '') {
    if (declaration.required) return { ok: false, message: `$${declaration.name} is required (${declaration.type})` };
    return { ok: true, value: undefined };
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    const name = baseTypeName(typeNode);
    if (typeNode.kind !== 'ListType' && !NON_STRING_SCALARS.has(name) && !schemaSaysComposite(schema, name)) value = trimmed;
    else return { ok: false, message: `$${declaration.name}: "${trimmed.slice(0, 60)}" is not JSON (write strings in quotes, objects as {"field": value})` };
  }
  return checkValue(declaration, typeNode, value, schema);
}

function schemaSaysComposite(schema: GraphQLSchema | undefined, name: string): boolean {
  const type = schema?.getType(name);
  return type !== undefined && !('serialize' in type);
}

function checkValue(declaration: VariableDeclaration, typeNode: TypeNode, value: unknown, schema?: GraphQLSchema): ParsedInput {
  if (value === null && typeNode.kind === 'NonNullType') return { ok: false, message: `$${declaration.name} cannot be null (${declaration.type})` };
  if (!schema) return { ok: true, value };
  const type = typeFromAST(schema, typeNode as Parameters<typeof typeFromAST>[1]);
  if (!type) return { ok: false, message: `$${declaration.name}: the schema has no type ${baseTypeName(typeNode)}` };
  if (!isInputType(type)) return { ok: false, message: `$${declaration.name}: ${declaration.type} is not an input type` };
  const problems: string[] = [];
  coerceInputValue(value, type, (path, _invalid, error: GraphQLError) => {
    problems.push(`${path.length ? `at ${path.join('.')}: ` : ''}${error.message}`);
  });
  if (problems.length) return { ok: false, message: `$${declaration.name} (${declaration.type}): ${problems.join('; ')}` };
  // The wire carries the JSON the user wrote; the coerced value holds internal representations (ObjectId…).
  if (isNonNullType(type) && value === undefined) return { ok: false, message: `$${declaration.name} is required` };
  return { ok: true, value };
}

/** The variables object from per-variable values (undefined ones left out, so defaults apply). */
export function variablesObject(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}

/** `queries.graphql` → `queries.variables.json`; `api.ts` → `api.variables.json`. */
export function variablesFileFor(file: string): string {
  const dot = file.lastIndexOf('.');
  const slash = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  return `${dot > slash ? file.slice(0, dot) : file}.variables.json`;
}

/**
 * Variables for one operation from a variables file's text: the object under the operation's name
 * (`{"TasksByStatus": {"status": "open"}}`), checked against the declarations. Undefined when the file has no entry.
 */
export function variablesFromFile(text: string, operationName: string | undefined, declarations: readonly VariableDeclaration[], schema?: GraphQLSchema): { ok: true; variables: Record<string, unknown> } | { ok: false; message: string } | undefined {
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch (e) { return { ok: false, message: `the variables file is not valid JSON: ${(e as Error).message}` }; }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, message: 'the variables file must hold an object keyed by operation name' };
  const key = operationName ?? '';
  if (!Object.prototype.hasOwnProperty.call(parsed, key)) return undefined;
  const entry = (parsed as Record<string, unknown>)[key];
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return { ok: false, message: `the variables of ${operationName ?? 'the anonymous operation'} must be an object` };
  const variables = entry as Record<string, unknown>;
  for (const declaration of declarations) {
    const has = Object.prototype.hasOwnProperty.call(variables, declaration.name);
    if (!has) {
      if (declaration.required) return { ok: false, message: `the variables file gives no $${declaration.name} for ${operationName ?? 'the operation'} (${declaration.type})` };
      continue;
    }
    const checked = checkValue(declaration, parseType(declaration.type), variables[declaration.name], schema);
    if (!checked.ok) return checked;
  }
  return { ok: true, variables };
}
