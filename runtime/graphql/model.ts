// Lookup tables built once per generated schema: for every document and embedded type, what each
// generated input field, update operator and sort value means in terms of stored keys. Requests only read them.
import type { CollectionTypeInfo, FieldInfo, GeneratedSchema, ObjectTypeInfo } from '../../core/graphql';
import { isEnumType, isInputObjectType, type GraphQLInputObjectType, type GraphQLSchema } from 'graphql';
import type { SortSpec } from '../store/types';

export type QueryOperator = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'exists';
export type UpdateOperator = 'set' | 'unset' | 'inc';

const querySuffixes: [string, QueryOperator][] = [
  ['', 'eq'], ['_ne', 'ne'], ['_gt', 'gt'], ['_gte', 'gte'], ['_lt', 'lt'], ['_lte', 'lte'], ['_in', 'in'], ['_nin', 'nin'], ['_exists', 'exists'],
];
const updateSuffixes: [string, UpdateOperator][] = [['', 'set'], ['_unset', 'unset'], ['_inc', 'inc']];

export interface TypeTables {
  info: ObjectTypeInfo;
  /** Set for document types. */
  collection?: CollectionTypeInfo;
  fieldByName: Map<string, FieldInfo>;
  query: Map<string, { field: FieldInfo; op: QueryOperator }>;
  insert: Map<string, FieldInfo>;
  update: Map<string, { field: FieldInfo; op: UpdateOperator }>;
  /** Sort enum value → sort document (document types with sortable fields only). */
  sort: Map<string, SortSpec>;
}

export interface RuntimeModel {
  generated: GeneratedSchema;
  /** By GraphQL type name: document and embedded types. */
  types: Map<string, TypeTables>;
  collections: Map<string, CollectionTypeInfo>;
}

export function buildRuntimeModel(generated: GeneratedSchema): RuntimeModel {
  const types = new Map<string, TypeTables>();
  const collections = new Map<string, CollectionTypeInfo>();
  const add = (info: ObjectTypeInfo, collection?: CollectionTypeInfo) => {
    types.set(info.typeName, tablesFor(generated.schema, info, collection));
    for (const field of info.fields) if (field.embedded) add(field.embedded);
  };
  for (const collection of generated.types) {
    collections.set(collection.typeName, collection);
    add(collection, collection);
  }
  return { generated, types, collections };
}

/**
 * Input field names are claimed property by property, first come first served, exactly as generation
 * adds them; a name the schema's input type lacks (an operator the field's scalar does not get) is skipped.
 */
function tablesFor(schema: GraphQLSchema, info: ObjectTypeInfo, collection?: CollectionTypeInfo): TypeTables {
  const inputFields = (name: string) => {
    const type = schema.getType(name);
    return isInputObjectType(type) ? (type as GraphQLInputObjectType).getFields() : {};
  };
  const queryFields = inputFields(info.queryInputName);
  const insertFields = inputFields(info.insertInputName);
  const updateFields = inputFields(info.updateInputName);
  const tables: TypeTables = {
    info, collection, fieldByName: new Map(), query: new Map(), insert: new Map(), update: new Map(), sort: new Map(),
  };
  const sortEnum = collection?.sortByInputName ? schema.getType(collection.sortByInputName) : undefined;
  const sortValues = new Set(isEnumType(sortEnum) ? sortEnum.getValues().map((v) => v.name) : []);
  for (const field of info.fields) {
    tables.fieldByName.set(field.name, field);
    for (const [suffix, op] of querySuffixes) {
      const name = field.name + suffix;
      if (Object.hasOwn(queryFields, name) && !tables.query.has(name)) tables.query.set(name, { field, op });
    }
    if (Object.hasOwn(insertFields, field.name) && !tables.insert.has(field.name)) tables.insert.set(field.name, field);
    for (const [suffix, op] of updateSuffixes) {
      const name = field.name + suffix;
      if (Object.hasOwn(updateFields, name) && !tables.update.has(name)) tables.update.set(name, { field, op });
    }
    const upper = field.name.toUpperCase();
    for (const [suffix, direction] of [['_ASC', 1], ['_DESC', -1]] as const) {
      const value = upper + suffix;
      if (sortValues.has(value) && !tables.sort.has(value)) tables.sort.set(value, { [field.sourceKey]: direction });
    }
  }
  return tables;
}

/** The value at a dotted path of a stored document; arrays along the way are not descended. */
export function valueAtPath(doc: Record<string, unknown>, path: string): unknown {
  if (!path.includes('.')) return doc[path];
  let current: unknown = doc;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}
