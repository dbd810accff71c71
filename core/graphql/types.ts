// What generation produces besides the schema itself: the facts the runtime needs to execute generated
// fields and custom resolvers, and that the language server shows (hover SDL, names usable as `generated`).
import type { GraphQLSchema } from 'graphql';
import type { Diagnostic } from '../diagnostics';
import type { CustomResolver } from '../model';

/** GraphQL scalars a schema property can map to (graphql.md §3). */
export type GraphqlScalar = 'ObjectId' | 'String' | 'Boolean' | 'Int' | 'Long' | 'Float' | 'DateTime';

export type MutationKind = 'insertOne' | 'insertMany' | 'updateOne' | 'updateMany' | 'upsertOne' | 'replaceOne' | 'deleteOne' | 'deleteMany';

/** A document or embedded object type and the input types generated beside it. */
export interface ObjectTypeInfo {
  typeName: string;
  queryInputName: string;
  insertInputName: string;
  updateInputName: string;
  /** In `properties` order of the schema; properties without a GraphQL equivalent are absent. */
  fields: FieldInfo[];
}

export interface FieldInfo {
  /** GraphQL field name (sanitised, graphql.md §2). */
  name: string;
  /** The document key the field reads and writes. */
  sourceKey: string;
  kind: 'scalar' | 'embedded' | 'relationship';
  /** The scalar of the stored value (of each element when `isList`); absent for embedded objects. */
  scalarType?: GraphqlScalar;
  /** The schema's bsonType of the stored value (of each element when `isList`), e.g. `decimal` for a `Float`. */
  bsonType: string;
  /**
   * A `string` property with `enum`: the GraphQL enum's name, and its values (upper-cased stored strings) with
   * the stored string each stands for. The executable schema maps between them in both directions.
   */
  enum?: { typeName: string; values: Array<{ name: string; stored: string }> };
  /** The stored value is an array. */
  isList: boolean;
  /** Listed in the schema's `required`: the output field is non-null and the insert field mandatory. */
  required: boolean;
  embedded?: ObjectTypeInfo;
  relationship?: RelationshipInfo;
}

export interface RelationshipInfo {
  target: { dataSource: string; database: string; collection: string };
  targetTypeName: string;
  /** The source document's key holding the linking value(s). */
  sourceKey: string;
  /** The foreign document's key matched against the source value. */
  foreignKey: string;
  /** To-many: the field returns `[Foreign]`. */
  isList: boolean;
  relationInputName: string;
}

export interface CollectionTypeInfo extends ObjectTypeInfo {
  dataSource: string;
  database: string;
  collection: string;
  /** Absolute path of the collection's schema.json. */
  schemaPath: string;
  /** Absent when no field is sortable (the `sortBy` argument is then absent too). */
  sortByInputName?: string;
  singularField: string;
  pluralField: string;
  mutations: Record<MutationKind, string>;
}

export interface ResolverTypeRef {
  kind: 'scalar' | 'generated' | 'custom';
  typeName: string;
  isList: boolean;
}

export interface GeneratedResolver {
  /** `Query`, `Mutation` or a document type name. */
  parent: string;
  fieldName: string;
  functionName: string;
  hasInput: boolean;
  inputTypeName?: string;
  input?: ResolverTypeRef;
  payload: { kind: 'default' | 'scalar' | 'generated' | 'custom'; typeName: string; isList: boolean };
  /** The resolver replaced a generated field with the same name on its parent. */
  overridesGeneratedField: boolean;
  config: CustomResolver;
}

export interface GeneratedSchema {
  /** The schema as SDL, in a stable order: scalars, collection types and their inputs, shared and custom types, Query, Mutation. */
  sdl: string;
  schema: GraphQLSchema;
  /** One entry per collection that has a GraphQL type, ordered by data source, database, collection. */
  types: CollectionTypeInfo[];
  /** Custom resolvers that made it into the schema, ordered by config file path. */
  resolvers: GeneratedResolver[];
  /** Generated (not custom) type names usable with the `generated` formats: input types for inputs, object types for payloads. */
  generatedTypeNames: { input: string[]; output: string[] };
  diagnostics: Diagnostic[];
}
