// Resolvers for the generated schema: root queries and the eight mutations per collection (graphql.md
// §5–§8), relationship fields (§9), fields whose stored key or value differs from the GraphQL one (§2, §3),
// and custom resolvers calling app functions (§10). They hold no per-request state: the user, the data
// access and the function runner come from the request context, so one executable schema serves every request.
import {
  GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, isListType, isNonNullType, isObjectType,
  type GraphQLFieldConfigMap, type GraphQLFieldResolver, type GraphQLInputType, type GraphQLOutputType,
} from 'graphql';
import type { CollectionTypeInfo, FieldInfo, GeneratedResolver, RelationshipInfo } from '../../core/graphql';
import { byId, type Document, type SortSpec } from '../store/types';
import type { RequestContext } from './context';
import { buildFilter } from './filter';
import type { RuntimeModel } from './model';
import { conformPayload, toFunctionInput } from './payload';
import { BSON_UNDEFINED, decimalToFloat, markUndefined } from './values';
import { toDocument, toUpdate } from './writes';

// Resolvers see the context as `any` in graphql's typings; every one here receives a RequestContext.
type Resolver = GraphQLFieldResolver<Document | undefined, RequestContext<unknown>, Record<string, unknown>>;
type Input = Record<string, unknown>;

/** The generated schema with resolvers attached, built once; the schema `generateSchema` returned is left untouched. */
export function buildExecutableSchema(model: RuntimeModel): GraphQLSchema {
  const resolvers = new Map<string, Map<string, Resolver>>();
  const put = (typeName: string, fieldName: string, resolver: Resolver) => {
    let fields = resolvers.get(typeName);
    if (!fields) resolvers.set(typeName, (fields = new Map()));
    fields.set(fieldName, resolver);
  };
  for (const collection of model.collections.values()) {
    addRootResolvers(model, collection, put);
  }
  for (const tables of model.types.values()) {
    for (const field of tables.info.fields) {
      const resolver = fieldResolver(field);
      if (resolver) put(tables.info.typeName, field.name, resolver);
    }
  }
  for (const resolver of model.generated.resolvers) put(resolver.parent, resolver.fieldName, customResolver(model, resolver));
  return withResolvers(model.generated.schema, resolvers);
}

function addRootResolvers(model: RuntimeModel, collection: CollectionTypeInfo, put: (type: string, field: string, resolver: Resolver) => void): void {
  const tables = model.types.get(collection.typeName)!;
  const filterOf = (ctx: RequestContext<unknown>, query: unknown) => buildFilter(ctx, tables, query as Input | null | undefined);
  const collectionOf = (ctx: RequestContext<unknown>) => ctx.collection(collection);
  const m = collection.mutations;

  put('Query', collection.singularField, async (_source, args, ctx) =>
    markUndefined(await collectionOf(ctx).findOne(await filterOf(ctx, args.query))));

  put('Query', collection.pluralField, async (_source, args, ctx) => {
    const limit = args.limit as number | null | undefined;
    const sort: SortSpec | undefined = typeof args.sortBy === 'string' ? tables.sort.get(args.sortBy) : undefined;
    const filter = args.query ? await filterOf(ctx, args.query) : {};
    const docs = await collectionOf(ctx).find(filter, { ...(limit && limit > 0 ? { limit } : {}), ...(sort ? { sort } : {}) });
    return markUndefined(docs);
  });

  // Every mutation ends by dropping the request's loaded relationship documents, which may now be stale.
  const mutation = (name: string, run: (args: Record<string, unknown>, ctx: RequestContext<unknown>) => Promise<unknown>): void =>
    put('Mutation', name, async (_source, args, ctx) => {
      try {
        return await run(args, ctx);
      } finally {
        ctx.forgetLoadedDocuments();
      }
    });

  mutation(m.insertOne, async (args, ctx) => {
    const coll = collectionOf(ctx);
    const { insertedId } = await coll.insertOne(await toDocument(ctx, tables, args.data as Input));
    return markUndefined(await coll.findOne(byId(insertedId)));
  });
  mutation(m.insertMany, async (args, ctx) => {
    const docs = await Promise.all((args.data as Input[]).map((item) => toDocument(ctx, tables, item)));
    const { insertedIds } = await collectionOf(ctx).insertMany(docs);
    return { insertedIds };
  });
  mutation(m.updateOne, async (args, ctx) => {
    const filter = await filterOf(ctx, args.query);
    const update = await toUpdate(ctx, tables, args.set as Input);
    const coll = collectionOf(ctx);
    if (Object.keys(update).length === 0) return markUndefined(await coll.findOne(filter));
    return markUndefined(await coll.findOneAndUpdate(filter, update, { returnNewDocument: true }));
  });
  mutation(m.updateMany, async (args, ctx) => {
    const filter = await filterOf(ctx, args.query);
    const update = await toUpdate(ctx, tables, args.set as Input);
    const coll = collectionOf(ctx);
    if (Object.keys(update).length === 0) return { matchedCount: await coll.countDocuments(filter), modifiedCount: 0 };
    const { matchedCount, modifiedCount } = await coll.updateMany(filter, update);
    return { matchedCount, modifiedCount };
  });
  mutation(m.upsertOne, async (args, ctx) => {
    const filter = await filterOf(ctx, args.query);
    const doc = await toDocument(ctx, tables, args.data as Input);
    return markUndefined(await collectionOf(ctx).findOneAndReplace(filter, doc, { upsert: true, returnNewDocument: true }));
  });
  mutation(m.replaceOne, async (args, ctx) => {
    const filter = await filterOf(ctx, args.query);
    const doc = await toDocument(ctx, tables, args.data as Input);
    return markUndefined(await collectionOf(ctx).findOneAndReplace(filter, doc, { returnNewDocument: true }));
  });
  mutation(m.deleteOne, async (args, ctx) => markUndefined(await collectionOf(ctx).findOneAndDelete(await filterOf(ctx, args.query))));
  mutation(m.deleteMany, async (args, ctx) => {
    const { deletedCount } = await collectionOf(ctx).deleteMany(await filterOf(ctx, args.query));
    return { deletedCount };
  });
}

/** Only fields that cannot be read as `source[name]` get a resolver; the rest use the fast default. */
function fieldResolver(field: FieldInfo): Resolver | undefined {
  if (field.kind === 'relationship' && field.relationship) return relationshipResolver(field, field.relationship);
  const key = field.sourceKey;
  if (field.bsonType === 'decimal') return (source) => decimalToFloat(source?.[key]);
  if (key !== field.name) return (source) => source?.[key];
  return undefined;
}

function relationshipResolver(field: FieldInfo, relationship: RelationshipInfo): Resolver {
  const key = relationship.sourceKey;
  const empty = field.required && relationship.isList ? () => [] : () => null;
  return (source, _args, ctx) => {
    const value = source?.[key];
    if (value === null || value === undefined || value === BSON_UNDEFINED) return empty();
    const loader = ctx.loader(relationship, field.bsonType);
    if (!relationship.isList) return loader.load(value).then((docs) => docs[0] ?? null);
    const values = Array.isArray(value) ? value : [value];
    return Promise.all(values.map((v) => loader.load(v))).then((groups) => [...new Set(groups.flat())]);
  };
}

/**
 * Calls the resolver's function as the requesting user: `(input, source)` with an input type,
 * `(source)` without (graphql.md §10.4); `source` is the parent document of a computed field and
 * absent on Query and Mutation.
 */
function customResolver(model: RuntimeModel, resolver: GeneratedResolver): Resolver {
  const isRoot = resolver.parent === 'Query' || resolver.parent === 'Mutation';
  const parentType = model.generated.schema.getType(resolver.parent) as GraphQLObjectType;
  const inputType = resolver.hasInput ? (parentType.getFields()[resolver.fieldName].args[0].type as GraphQLInputType) : undefined;
  return async (source, args, ctx) => {
    const callArgs: unknown[] = [];
    if (inputType) callArgs.push(toFunctionInput(inputType, args.input));
    if (!isRoot) callArgs.push(source);
    try {
      return conformPayload(model, resolver, await ctx.runFunction(resolver.functionName, callArgs));
    } finally {
      if (resolver.parent === 'Mutation') ctx.forgetLoadedDocuments();
    }
  };
}

/**
 * A copy of `schema` whose object types carry the given resolvers. Input, enum and scalar types are
 * shared with the original: only object types hold resolvers.
 */
function withResolvers(schema: GraphQLSchema, resolvers: Map<string, Map<string, Resolver>>): GraphQLSchema {
  const clones = new Map<string, GraphQLObjectType>();
  const mapOutput = (type: GraphQLOutputType): GraphQLOutputType => {
    if (isNonNullType(type)) return new GraphQLNonNull(mapOutput(type.ofType));
    if (isListType(type)) return new GraphQLList(mapOutput(type.ofType));
    return isObjectType(type) ? cloneObject(type) : type;
  };
  const cloneObject = (type: GraphQLObjectType): GraphQLObjectType => {
    if (type.name.startsWith('__')) return type;
    let clone = clones.get(type.name);
    if (clone) return clone;
    const config = type.toConfig();
    const own = resolvers.get(type.name);
    clone = new GraphQLObjectType({
      ...config,
      fields: () => {
        const fields: GraphQLFieldConfigMap<unknown, unknown> = {};
        for (const [name, field] of Object.entries(config.fields)) {
          fields[name] = { ...field, type: mapOutput(field.type), resolve: (own?.get(name) as GraphQLFieldResolver<unknown, unknown> | undefined) ?? field.resolve };
        }
        return fields;
      },
    });
    clones.set(type.name, clone);
    return clone;
  };
  const config = schema.toConfig();
  return new GraphQLSchema({
    ...config,
    query: config.query && cloneObject(config.query),
    mutation: config.mutation && cloneObject(config.mutation),
    types: config.types.map((t) => (isObjectType(t) ? cloneObject(t) : t)),
  });
}
