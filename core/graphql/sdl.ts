// SDL snippets of the generated schema for hovers in the editor and for `asl schema`.
import { getNamedType, isInputObjectType, isObjectType, isScalarType, printSchema, printType, type GraphQLField, type GraphQLNamedType, type GraphQLSchema, type GraphQLType } from 'graphql';
import type { CustomResolver } from '../model';
import type { CollectionTypeInfo, GeneratedResolver, GeneratedSchema } from './types';

/**
 * The schema as SDL. A collection may generate an ordinary type named `Subscription` (graphql.md: only Query,
 * Mutation, the scalars and the shared payloads are reserved); graphql-js omits the `schema { … }` block for
 * conventional root names, and every tool reading the text would then take that type for the subscription
 * root. So the block is printed whenever such a type exists.
 */
export function printGeneratedSchema(schema: GraphQLSchema): string {
  const sdl = printSchema(schema);
  if (schema.getSubscriptionType() || !schema.getType('Subscription')) return sdl;
  const roots = [schema.getQueryType() && `  query: ${schema.getQueryType()!.name}`, schema.getMutationType() && `  mutation: ${schema.getMutationType()!.name}`].filter(Boolean);
  return `schema {\n${roots.join('\n')}\n}\n\n${sdl}`;
}

/** The SDL definition of one type of the schema, or undefined when there is no such type. */
export function sdlForType(generated: GeneratedSchema, typeName: string): string | undefined {
  const type = generated.schema.getType(typeName);
  return type ? printType(type) : undefined;
}

export function findCollectionType(generated: GeneratedSchema, dataSource: string, database: string, collection: string): CollectionTypeInfo | undefined {
  return generated.types.find((t) => t.dataSource === dataSource && t.database === database && t.collection === collection);
}

/**
 * The field a custom resolver adds, as `extend type <Parent> { … }`, followed by the definitions of the
 * custom types it introduced. Accepts the resolver's config or its generated entry; undefined when the
 * resolver was not generated (its problems are in the diagnostics).
 */
export function sdlForResolverField(generated: GeneratedSchema, resolver: CustomResolver | GeneratedResolver): string | undefined {
  const entry = generated.resolvers.find((r) => r === resolver || r.config === resolver);
  if (!entry) return undefined;
  const parent = generated.schema.getType(entry.parent);
  if (!isObjectType(parent)) return undefined;
  const field = parent.getFields()[entry.fieldName];
  if (!field) return undefined;
  const parts = [`extend type ${parent.name} {\n  ${printFieldSignature(field)}\n}`];
  const customRoots = [entry.input, entry.payload].filter((ref) => ref?.kind === 'custom').map((ref) => ref!.typeName);
  for (const type of customTypesFrom(generated, customRoots)) parts.push(printType(type));
  return parts.join('\n\n');
}

function printFieldSignature(field: GraphQLField<unknown, unknown>): string {
  const args = field.args.map((a) => `${a.name}: ${String(a.type)}`).join(', ');
  return `${field.name}${args ? `(${args})` : ''}: ${String(field.type)}`;
}

/** The custom types named by `roots` and the custom types nested in them, in discovery order. */
function customTypesFrom(generated: GeneratedSchema, roots: string[]): GraphQLNamedType[] {
  const generatedNames = new Set([...generated.generatedTypeNames.input, ...generated.generatedTypeNames.output]);
  const seen = new Set<string>();
  const result: GraphQLNamedType[] = [];
  const visit = (name: string) => {
    if (seen.has(name) || generatedNames.has(name)) return;
    seen.add(name);
    const type = generated.schema.getType(name);
    if (!type || isScalarType(type)) return;
    result.push(type);
    if (isObjectType(type) || isInputObjectType(type)) {
      for (const f of Object.values(type.getFields())) visit(getNamedType(f.type as GraphQLType).name);
    }
  };
  roots.forEach(visit);
  return result;
}
