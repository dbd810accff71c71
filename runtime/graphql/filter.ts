// `<Type>QueryInput` → MongoDB filter (graphql.md §7). A condition on a relationship field first finds the
// foreign documents matching the sub-query (as the requesting user), then matches the source key against
// their foreign key values.
import type { FieldInfo, RelationshipInfo } from '../../core/graphql';
import type { Filter } from '../store/types';
import type { RequestContext } from './context';
import { valueAtPath, type QueryOperator, type RuntimeModel, type TypeTables } from './model';
import { toBson, toBsonList } from './values';

type Input = Record<string, unknown>;

const comparison: Partial<Record<QueryOperator, string>> = { ne: '$ne', gt: '$gt', gte: '$gte', lt: '$lt', lte: '$lte' };

/** Collects single-key conditions; a key used twice moves the later condition into `$and`. */
class FilterBuilder {
  readonly filter: Filter = {};
  private readonly and: Filter[] = [];

  add(condition: Filter): void {
    for (const [key, value] of Object.entries(condition)) {
      if (Object.hasOwn(this.filter, key)) this.and.push({ [key]: value });
      else this.filter[key] = value;
    }
  }

  result(): Filter {
    if (this.and.length === 0) return this.filter;
    if (Object.hasOwn(this.filter, '$and')) this.and.unshift(...(this.filter.$and as Filter[]));
    return { ...this.filter, $and: this.and };
  }
}

/** `prefix` is the dotted path of an embedded object (`checklist.`), empty at the document root and inside `$elemMatch`. */
export async function buildFilter<User>(ctx: RequestContext<User>, tables: TypeTables, input: Input | null | undefined, prefix = ''): Promise<Filter> {
  const builder = new FilterBuilder();
  if (!input) return builder.filter;
  const model = ctx.env.model;
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (name === 'AND' || name === 'OR') {
      if (!Array.isArray(value) || value.length === 0) continue;
      const parts = await Promise.all(value.map((q) => buildFilter(ctx, tables, q as Input, prefix)));
      builder.add({ [name === 'AND' ? '$and' : '$or']: parts });
      continue;
    }
    const entry = tables.query.get(name);
    if (!entry) continue;
    const { field, op } = entry;
    const key = prefix + field.sourceKey;
    if (op === 'exists') {
      if (value !== null) builder.add(value ? { [key]: { $ne: null } } : { [key]: null });
      continue;
    }
    if (field.kind === 'relationship' && field.relationship) {
      builder.add(await relationshipCondition(ctx, model, field.relationship, key, op, value));
    } else if (field.kind === 'embedded' && field.embedded) {
      const embedded = model.types.get(field.embedded.typeName)!;
      const condition = await embeddedCondition(ctx, embedded, field, key, op, value);
      if (condition) builder.add(condition);
    } else {
      const condition = scalarCondition(field, key, op, value);
      if (condition) builder.add(condition);
    }
  }
  return builder.result();
}

function scalarCondition(field: FieldInfo, key: string, op: QueryOperator, value: unknown): Filter | undefined {
  if (op === 'eq') return { [key]: field.isList ? toBsonList(value, field.bsonType) : toBson(value, field.bsonType) };
  if (op === 'in' || op === 'nin') {
    if (!Array.isArray(value)) return undefined;
    return { [key]: { [op === 'in' ? '$in' : '$nin']: value.map((v) => toBson(v, field.bsonType)) } };
  }
  return { [key]: { [comparison[op]!]: toBson(value, field.bsonType) } };
}

async function embeddedCondition<User>(
  ctx: RequestContext<User>, embedded: TypeTables, field: FieldInfo, key: string, op: QueryOperator, value: unknown,
): Promise<Filter | undefined> {
  if (value === null) return op === 'eq' ? { [key]: null } : undefined;
  if (!field.isList) {
    const sub = await buildFilter(ctx, embedded, value as Input, `${key}.`);
    return Object.keys(sub).length > 0 ? sub : undefined;
  }
  if (!Array.isArray(value)) return undefined;
  const elementFilters = await Promise.all(value.map((q) => buildFilter(ctx, embedded, q as Input)));
  if (op === 'eq') {
    // Every listed sub-query is matched by some element.
    return elementFilters.length === 0 ? undefined : { $and: elementFilters.map((f) => ({ [key]: { $elemMatch: f } })) };
  }
  const anyElement = { [key]: { $elemMatch: elementFilters.length === 1 ? elementFilters[0] : { $or: elementFilters } } };
  if (op === 'in') return elementFilters.length === 0 ? { [key]: { $in: [] } } : anyElement;
  return elementFilters.length === 0 ? undefined : { $nor: [anyElement] };
}

async function relationshipCondition<User>(
  ctx: RequestContext<User>, model: RuntimeModel, relationship: RelationshipInfo, key: string, op: QueryOperator, value: unknown,
): Promise<Filter> {
  if (value === null) return { [key]: null };
  const foreign = model.types.get(relationship.targetTypeName)!;
  const linkValues = async (queries: Input[]) => {
    const filters = await Promise.all(queries.map((q) => buildFilter(ctx, foreign, q)));
    const filter = filters.length === 1 ? filters[0] : { $or: filters };
    const docs = await ctx.collection(relationship.target).find(filter, { projection: { [relationship.foreignKey]: 1 } });
    return docs.flatMap((doc) => {
      const v = valueAtPath(doc, relationship.foreignKey);
      return Array.isArray(v) ? v : v === undefined ? [] : [v];
    });
  };
  if (!relationship.isList) return { [key]: { $in: await linkValues([value as Input]) } };
  const queries = Array.isArray(value) ? (value as Input[]) : [value as Input];
  if (op === 'eq') {
    // Each listed sub-query is matched by some linked document.
    const conditions = await Promise.all(queries.map(async (q) => ({ [key]: { $in: await linkValues([q]) } })));
    return conditions.length === 0 ? {} : { $and: conditions };
  }
  const values = queries.length === 0 ? [] : await linkValues(queries);
  return { [key]: { [op === 'in' ? '$in' : '$nin']: values } };
}
