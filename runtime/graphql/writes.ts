// `<Type>InsertInput` → stored document and `<Type>UpdateInput` → update operators (graphql.md §8).
// A RelationInput links existing foreign documents by value or creates them first; `create` wins.
import type { FieldInfo, RelationshipInfo } from '../../core/graphql';
import type { Document, UpdateSpec } from '../store/types';
import type { RequestContext } from './context';
import { valueAtPath, type RuntimeModel, type TypeTables } from './model';
import { toBson, toBsonList } from './values';

type Input = Record<string, unknown>;

export async function toDocument<User>(ctx: RequestContext<User>, tables: TypeTables, input: Input): Promise<Document> {
  const doc: Document = {};
  for (const [name, value] of Object.entries(input)) {
    const field = tables.insert.get(name);
    if (!field || value === undefined) continue;
    doc[field.sourceKey] = await fieldValue(ctx, field, value);
  }
  return doc;
}

async function fieldValue<User>(ctx: RequestContext<User>, field: FieldInfo, value: unknown): Promise<unknown> {
  if (value === null) return null;
  const model = ctx.env.model;
  if (field.kind === 'relationship' && field.relationship) return relationValue(ctx, model, field, field.relationship, value as Input);
  if (field.kind === 'embedded' && field.embedded) {
    const embedded = model.types.get(field.embedded.typeName)!;
    if (!field.isList) return toDocument(ctx, embedded, value as Input);
    return Promise.all((value as Input[]).map((item) => (item === null ? null : toDocument(ctx, embedded, item))));
  }
  return field.isList ? toBsonList(value, field.bsonType) : toBson(value, field.bsonType);
}

/** The source value a RelationInput stands for: the created documents' foreign keys, else the linked values. */
async function relationValue<User>(ctx: RequestContext<User>, model: RuntimeModel, field: FieldInfo, relationship: RelationshipInfo, input: Input): Promise<unknown> {
  const create = input.create;
  if (create !== undefined && create !== null) {
    const foreign = model.types.get(relationship.targetTypeName)!;
    const collection = ctx.collection(relationship.target);
    const items = relationship.isList ? (create as Input[]) : [create as Input];
    const docs = await Promise.all(items.map((item) => toDocument(ctx, foreign, item)));
    const values: unknown[] = [];
    for (const doc of docs) {
      const { insertedId } = await collection.insertOne(doc);
      values.push(relationship.foreignKey === '_id' ? insertedId : valueAtPath(doc, relationship.foreignKey));
    }
    return relationship.isList ? values : values[0];
  }
  const link = input.link;
  if (link === undefined) return null;
  return relationship.isList ? toBsonList(link, field.bsonType) : toBson(link, field.bsonType);
}

/** Update operators for an UpdateInput; `$set` of an embedded object's fields uses dotted paths. */
export async function toUpdate<User>(ctx: RequestContext<User>, tables: TypeTables, input: Input): Promise<UpdateSpec> {
  const $set: Document = {}, $unset: Document = {}, $inc: Document = {};
  await collectUpdate(ctx, tables, input, '', { $set, $unset, $inc });
  const update: UpdateSpec = {};
  if (Object.keys($set).length > 0) update.$set = $set;
  if (Object.keys($unset).length > 0) update.$unset = $unset;
  if (Object.keys($inc).length > 0) update.$inc = $inc;
  return update;
}

async function collectUpdate<User>(
  ctx: RequestContext<User>, tables: TypeTables, input: Input, prefix: string, ops: { $set: Document; $unset: Document; $inc: Document },
): Promise<void> {
  for (const [name, value] of Object.entries(input)) {
    const entry = tables.update.get(name);
    if (!entry || value === undefined) continue;
    const { field, op } = entry;
    const key = prefix + field.sourceKey;
    if (op === 'unset') {
      if (value === true) ops.$unset[key] = '';
    } else if (op === 'inc') {
      if (value !== null) ops.$inc[key] = toBson(value, field.bsonType);
    } else if (field.kind === 'embedded' && field.embedded && !field.isList && value !== null) {
      await collectUpdate(ctx, ctx.env.model.types.get(field.embedded.typeName)!, value as Input, `${key}.`, ops);
    } else if (field.kind === 'embedded' && field.embedded && Array.isArray(value)) {
      // A list of embedded objects is replaced as a whole; each element is written like an insert
      // (its `_unset`/`_inc` fields have nothing to apply to and are not insert fields).
      const embedded = ctx.env.model.types.get(field.embedded.typeName)!;
      ops.$set[key] = await Promise.all(value.map((item) => (item === null ? null : toDocument(ctx, embedded, item as Input))));
    } else {
      ops.$set[key] = await fieldValue(ctx, field, value);
    }
  }
}
