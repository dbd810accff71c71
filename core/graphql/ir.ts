// A plain description of the schema being generated. Generation fills it in any order (types refer to
// each other by name, relationships may be cyclic, resolvers replace fields), then it is turned into
// graphql-js types in one pass.
import {
  GraphQLBoolean, GraphQLEnumType, GraphQLFloat, GraphQLID, GraphQLInputObjectType, GraphQLInt, GraphQLList, GraphQLNonNull,
  GraphQLObjectType, GraphQLSchema, GraphQLString,
  type GraphQLFieldConfigMap, type GraphQLInputFieldConfigMap, type GraphQLInputType, type GraphQLNamedType, type GraphQLNullableType, type GraphQLOutputType, type GraphQLType,
} from 'graphql';
import { customScalars } from './scalars';

export type TypeRef =
  | { kind: 'named'; name: string }
  | { kind: 'list'; of: TypeRef }
  | { kind: 'nonNull'; of: TypeRef };

export const named = (name: string): TypeRef => ({ kind: 'named', name });
export const listOf = (of: TypeRef): TypeRef => ({ kind: 'list', of });
export const nonNull = (of: TypeRef): TypeRef => ({ kind: 'nonNull', of });
export const nonNullIf = (condition: boolean, of: TypeRef): TypeRef => (condition ? nonNull(of) : of);

export interface IrArg { name: string; type: TypeRef; defaultValue?: unknown }
export interface IrField { name: string; type: TypeRef; args: IrArg[] }

export type IrType =
  | { kind: 'object'; name: string; fields: Map<string, IrField> }
  | { kind: 'input'; name: string; fields: Map<string, IrField> }
  /** `storedValues[i]`, when present, is the value `values[i]` stands for: what resolvers return and receive. */
  | { kind: 'enum'; name: string; values: string[]; storedValues?: string[] };

export type IrObjectType = Extract<IrType, { kind: 'object' }>;
export type IrInputType = Extract<IrType, { kind: 'input' }>;

export function namedTypeOf(ref: TypeRef): string {
  return ref.kind === 'named' ? ref.name : namedTypeOf(ref.of);
}

const builtInScalars: Record<string, GraphQLNamedType> = {
  String: GraphQLString, Int: GraphQLInt, Float: GraphQLFloat, Boolean: GraphQLBoolean, ID: GraphQLID,
};

/** Names that exist in every schema; nothing generated may take them. */
export const builtInTypeNames: readonly string[] = [...Object.keys(builtInScalars), ...Object.keys(customScalars)];

/**
 * Builds the graphql-js schema. `types` must contain every type referenced by a field, in the order
 * they should be printed; `Query` and `Mutation` are looked up by name.
 */
export function toGraphqlSchema(types: ReadonlyMap<string, IrType>): GraphQLSchema {
  const built = new Map<string, GraphQLNamedType>();
  const namedType = (name: string): GraphQLNamedType => {
    const existing = built.get(name) ?? builtInScalars[name] ?? customScalars[name];
    if (existing) return existing;
    const ir = types.get(name);
    if (!ir) throw new Error(`GraphQL generation referenced the undefined type "${name}"`);
    const type = buildType(ir);
    built.set(name, type);
    return type;
  };
  const resolve = (ref: TypeRef): GraphQLType => {
    switch (ref.kind) {
      case 'named': return namedType(ref.name);
      case 'list': return new GraphQLList(resolve(ref.of));
      case 'nonNull': return new GraphQLNonNull(resolve(ref.of) as GraphQLNullableType);
    }
  };
  const buildType = (ir: IrType): GraphQLNamedType => {
    switch (ir.kind) {
      case 'enum':
        return new GraphQLEnumType({ name: ir.name, values: Object.fromEntries(ir.values.map((v, i) => [v, { value: ir.storedValues?.[i] ?? v }])) });
      case 'input':
        return new GraphQLInputObjectType({
          name: ir.name,
          fields: () => {
            const fields: GraphQLInputFieldConfigMap = {};
            for (const f of ir.fields.values()) fields[f.name] = { type: resolve(f.type) as GraphQLInputType };
            return fields;
          },
        });
      case 'object':
        return new GraphQLObjectType({
          name: ir.name,
          fields: () => {
            const fields: GraphQLFieldConfigMap<unknown, unknown> = {};
            for (const f of ir.fields.values()) {
              fields[f.name] = {
                type: resolve(f.type) as GraphQLOutputType,
                args: Object.fromEntries(f.args.map((a) => [a.name, { type: resolve(a.type) as GraphQLInputType, defaultValue: a.defaultValue }])),
              };
            }
            return fields;
          },
        });
    }
  };

  const referencedScalars = new Set<string>();
  const noteScalar = (ref: TypeRef) => { const name = namedTypeOf(ref); if (customScalars[name]) referencedScalars.add(name); };
  for (const ir of types.values()) {
    if (ir.kind === 'enum') continue;
    for (const f of ir.fields.values()) { noteScalar(f.type); f.args.forEach((a) => noteScalar(a.type)); }
  }
  const ordered: GraphQLNamedType[] = Object.keys(customScalars).filter((n) => referencedScalars.has(n)).map(namedType);
  for (const name of types.keys()) if (name !== 'Query' && name !== 'Mutation') ordered.push(namedType(name));
  const query = types.has('Query') ? namedType('Query') as GraphQLObjectType : undefined;
  const mutation = types.has('Mutation') ? namedType('Mutation') as GraphQLObjectType : undefined;
  if (query) ordered.push(query);
  if (mutation) ordered.push(mutation);
  return new GraphQLSchema({ query, mutation, types: ordered });
}
