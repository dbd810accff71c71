// Generates the app's GraphQL schema from collection schemas, relationships and custom resolvers,
// following graphql.md. Problems never stop generation: each is reported at the responsible key, the
// affected part is left out (or keeps its plain type), and everything else is generated as usual.
// Processing order is fixed (collections by data source/database/collection, resolvers by file path),
// so which of two colliding definitions wins is deterministic.
import type { GraphQLSchema } from 'graphql';
import { DiagnosticSink, type Diagnostic } from '../diagnostics';
import { isObject, type JSONPath, type JsonFile } from '../json';
import { isClusterSource, type AppModel, type Collection, type CustomResolver, type DataSource } from '../model';
import { graphqlPlural, isValidGraphqlName, lowerFirst, singularize, upperFirst } from './inflect';
import {
  builtInTypeNames, listOf, named, nonNull, nonNullIf, toGraphqlSchema,
  type IrField, type IrInputType, type IrObjectType, type IrType, type TypeRef,
} from './ir';
import { printGeneratedSchema } from './sdl';
import { readObjectProperties, scalarForBsonType, type PropertyShape, type ShapeReader } from './shape';
import type {
  CollectionTypeInfo, FieldInfo, GeneratedResolver, GeneratedSchema, GraphqlScalar, MutationKind, ObjectTypeInfo, RelationshipInfo, ResolverTypeRef,
} from './types';

const sharedPayloadNames = ['InsertManyPayload', 'UpdateManyPayload', 'DeleteManyPayload'] as const;
const defaultPayloadName = 'DefaultPayload';
/** Scalars compared with `_gt`/`_lt`/… and usable for sorting (graphql.md §7, §8). */
const orderedScalars: ReadonlySet<GraphqlScalar> = new Set(['String', 'Int', 'Long', 'Float', 'ObjectId', 'DateTime']);
/** Scalars that get an `_inc` update operator. */
const incrementableScalars: ReadonlySet<GraphqlScalar> = new Set(['Int', 'Float']);

/**
 * Remembers the collection part of the last generation (types, inputs, root fields: most of the work), so
 * that a change confined to custom resolvers regenerates only the resolvers. The language server keeps one
 * per app; inputs are compared by identity (parsed files keep theirs while their text is unchanged).
 */
export class GenerationCache {
  collections?: CollectionSnapshot;
}

export function generateSchema(app: AppModel, cache?: GenerationCache): GeneratedSchema {
  return new SchemaGenerator(app).generate(cache);
}

/** What the collection phase produced, kept unmodified: restoring it hands out fresh copies of what resolvers change. */
interface CollectionSnapshot {
  inputs: unknown[];
  types: Map<string, IrType>;
  typeOwners: Map<string, string>;
  rootFieldOwners: { Query: Map<string, string>; Mutation: Map<string, string> };
  candidates: Map<string, Candidate>;
  documentTypeNames: string[];
  diagnostics: Diagnostic[];
  generatedTypeNames: { input: string[]; output: string[] };
}

function collectionInputs(app: AppModel): unknown[] {
  const inputs: unknown[] = [app.graphql.useNaturalPluralization];
  for (const ds of app.dataSources) {
    inputs.push(ds.name, ds.type);
    for (const c of ds.collections) inputs.push(c.database, c.collection, c.schema, c.relationships);
  }
  return inputs;
}

function sameInputs(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const withOwnFields = (type: IrObjectType): IrObjectType => ({ ...type, fields: new Map(type.fields) });

/** A collection whose type name and root fields were claimed; its types are built in the second pass. */
interface Candidate {
  dataSource: DataSource;
  collection: Collection;
  file: JsonFile;
  properties: PropertyShape[];
  info: CollectionTypeInfo;
}

/** A relationship of a source field, as declared and checked. */
interface RelationshipDecl { target: Candidate; ref: RelationshipInfo['target']; sourceKey: string; foreignKey: string; isList: boolean }

const collectionKey = (dataSource: string, database: string, collection: string) => `${dataSource}/${database}/${collection}`;

class SchemaGenerator {
  private readonly sink = new DiagnosticSink();
  /** Every type of the schema in print order. */
  private types = new Map<string, IrType>();
  /** Type name → who owns it, for collision messages. Holds names claimed before their type is built. */
  private typeOwners = new Map<string, string>();
  private query: IrObjectType = { kind: 'object', name: 'Query', fields: new Map() };
  private mutation: IrObjectType = { kind: 'object', name: 'Mutation', fields: new Map() };
  private rootFieldOwners = { Query: new Map<string, string>(), Mutation: new Map<string, string>() };
  private candidates = new Map<string, Candidate>();
  private readonly documentTypes = new Map<string, IrObjectType>();
  private readonly resolvers: GeneratedResolver[] = [];

  constructor(private readonly app: AppModel) {
    // `Subscription` is not reserved: the platform generates it for a `subscriptions` collection like any other name.
    for (const name of [...builtInTypeNames, 'Query', 'Mutation', ...sharedPayloadNames, defaultPayloadName]) {
      this.typeOwners.set(name, 'a built-in type');
    }
  }

  generate(cache?: GenerationCache): GeneratedSchema {
    const inputs = collectionInputs(this.app);
    let generatedTypeNames: { input: string[]; output: string[] };
    if (cache?.collections && sameInputs(cache.collections.inputs, inputs)) {
      generatedTypeNames = this.restore(cache.collections);
    } else {
      this.types.set('Query', this.query);
      this.types.set('Mutation', this.mutation);
      this.claimCollections();
      for (const candidate of this.candidates.values()) this.buildCollection(candidate);
      if (this.candidates.size > 0) this.addSharedPayloads();
      generatedTypeNames = this.generatedTypeNames();
      if (cache) cache.collections = this.snapshot(inputs, generatedTypeNames);
    }
    this.addCustomResolvers(generatedTypeNames);
    if (this.mutation.fields.size === 0) this.types.delete('Mutation');
    if (this.query.fields.size === 0) this.reportEmptyApi();

    const types = this.types;
    let schema: GraphQLSchema | undefined;
    let sdl: string | undefined;
    return {
      // Built on first use: checking an app needs only the diagnostics, and building graphql-js types
      // is most of the cost of generation; the runtime executes against `schema` and rarely needs the text.
      get schema() { return (schema ??= toGraphqlSchema(types)); },
      get sdl() { return (sdl ??= printGeneratedSchema(this.schema)); },
      types: [...this.candidates.values()].map((c) => c.info),
      resolvers: this.resolvers,
      generatedTypeNames,
      diagnostics: this.sink.items,
    };
  }

  /** Resolvers change Query, Mutation and document types: the snapshot keeps copies of those the live state does not share. */
  private snapshot(inputs: unknown[], generatedTypeNames: { input: string[]; output: string[] }): CollectionSnapshot {
    const types = new Map(this.types);
    for (const [name, type] of types) if (type === this.query || type === this.mutation || this.documentTypes.get(name) === type) types.set(name, withOwnFields(type as IrObjectType));
    return {
      inputs, types, generatedTypeNames,
      typeOwners: new Map(this.typeOwners),
      rootFieldOwners: { Query: new Map(this.rootFieldOwners.Query), Mutation: new Map(this.rootFieldOwners.Mutation) },
      candidates: this.candidates,
      documentTypeNames: [...this.documentTypes.keys()],
      diagnostics: [...this.sink.items],
    };
  }

  private restore(snapshot: CollectionSnapshot): { input: string[]; output: string[] } {
    this.types = new Map(snapshot.types);
    this.query = withOwnFields(snapshot.types.get('Query') as IrObjectType);
    this.mutation = withOwnFields(snapshot.types.get('Mutation') as IrObjectType);
    this.types.set('Query', this.query);
    this.types.set('Mutation', this.mutation);
    for (const name of snapshot.documentTypeNames) {
      const type = withOwnFields(snapshot.types.get(name) as IrObjectType);
      this.types.set(name, type);
      this.documentTypes.set(name, type);
    }
    this.typeOwners = new Map(snapshot.typeOwners);
    this.rootFieldOwners = { Query: new Map(snapshot.rootFieldOwners.Query), Mutation: new Map(snapshot.rootFieldOwners.Mutation) };
    this.candidates = snapshot.candidates;
    for (const d of snapshot.diagnostics) this.sink.add(d);
    return snapshot.generatedTypeNames;
  }

  // ---- collections: names first, so relationships can refer to any collection ----

  private claimCollections(): void {
    const collections: { dataSource: DataSource; collection: Collection; file: JsonFile }[] = [];
    for (const dataSource of this.app.dataSources) {
      if (!isClusterSource(dataSource)) continue;
      for (const collection of dataSource.collections) if (collection.schema) collections.push({ dataSource, collection, file: collection.schema });
    }
    collections.sort((a, b) => compareKeys(
      [a.dataSource.name, a.collection.database, a.collection.collection], [b.dataSource.name, b.collection.database, b.collection.collection]));
    for (const c of collections) this.claimCollection(c.dataSource, c.collection, c.file);
  }

  private claimCollection(dataSource: DataSource, collection: Collection, file: JsonFile): void {
    const schema = file.value;
    const label = collectionKey(dataSource.name, collection.database, collection.collection);
    if (schema === undefined || file.syntaxErrors.length > 0) return; // The loader reports syntax errors; a half-parsed schema would only add noise.
    if (!isObject(schema)) {
      this.sink.atRange(file, file.startRange, 'warning', 'graphql/invalid-schema', `Collection ${label} has no GraphQL type: its schema is not an object.`);
      return;
    }
    const rootType = schema.bsonType ?? schema.type;
    if (rootType !== undefined && rootType !== 'object') {
      this.sink.at(file, [schema.bsonType !== undefined ? 'bsonType' : 'type'], 'warning', 'graphql/invalid-schema',
        `Collection ${label} has no GraphQL type: a collection schema must have bsonType "object".`);
      return;
    }
    const properties = readObjectProperties(this.reader(file), schema, []);
    if (properties.length === 0) {
      this.sink.at(file, ['properties'], 'information', 'graphql/empty-type',
        `Collection ${label} has no GraphQL type: its schema has no property with a GraphQL type.`);
      return;
    }
    if (schema.title !== undefined && typeof schema.title !== 'string') {
      this.sink.at(file, ['title'], 'warning', 'graphql/invalid-title', `"title" must be a string; the collection name "${collection.collection}" names the type instead.`);
    }
    const base = typeof schema.title === 'string' && schema.title !== '' ? schema.title : collection.collection;
    const typeName = this.typeNameFromTitle(base);
    if (!typeName) {
      this.sink.at(file, ['title'], 'error', 'graphql/invalid-type-name', `"${base}" cannot be turned into a GraphQL type name.`);
      return;
    }
    const plural = upperFirst(graphqlPlural(typeName, this.app.graphql.useNaturalPluralization));
    const mutations: Record<MutationKind, string> = {
      insertOne: `insertOne${typeName}`, insertMany: `insertMany${plural}`,
      updateOne: `updateOne${typeName}`, updateMany: `updateMany${plural}`,
      upsertOne: `upsertOne${typeName}`, replaceOne: `replaceOne${typeName}`,
      deleteOne: `deleteOne${typeName}`, deleteMany: `deleteMany${plural}`,
    };
    const info: CollectionTypeInfo = {
      typeName,
      queryInputName: `${typeName}QueryInput`,
      insertInputName: `${typeName}InsertInput`,
      updateInputName: `${typeName}UpdateInput`,
      fields: [],
      dataSource: dataSource.name,
      database: collection.database,
      collection: collection.collection,
      schemaPath: file.path,
      singularField: lowerFirst(typeName),
      pluralField: lowerFirst(plural),
      mutations,
    };
    const owner = `collection ${label}`;
    const typeNames = [typeName, info.queryInputName, info.insertInputName, info.updateInputName, `${typeName}SortByInput`];
    const takenType = typeNames.find((n) => this.typeOwners.has(n));
    if (takenType) {
      // The platform stores such a schema (and reports the clash when it generates); an export can hold it.
      this.sink.at(file, ['title'], 'warning', 'graphql/duplicate-type-name',
        `Collection ${label} has no GraphQL type: the type name "${takenType}" is already used by ${this.typeOwners.get(takenType)}.`,
        { data: { typeName: takenType } });
      return;
    }
    const queryFields = [info.singularField, info.pluralField];
    const takenField = queryFields.find((n) => this.rootFieldOwners.Query.has(n)) ?? Object.values(mutations).find((n) => this.rootFieldOwners.Mutation.has(n));
    if (takenField) {
      const by = this.rootFieldOwners.Query.get(takenField) ?? this.rootFieldOwners.Mutation.get(takenField);
      this.sink.at(file, ['title'], 'warning', 'graphql/duplicate-root-field',
        `Collection ${label} has no GraphQL type: the root field "${takenField}" is already generated for ${by}.`, { data: { fieldName: takenField } });
      return;
    }
    for (const n of typeNames) this.typeOwners.set(n, owner);
    for (const n of queryFields) this.rootFieldOwners.Query.set(n, owner);
    for (const n of Object.values(mutations)) this.rootFieldOwners.Mutation.set(n, owner);
    this.candidates.set(collectionKey(dataSource.name, collection.database, collection.collection), { dataSource, collection, file, properties, info });
  }

  /** Type name from a schema title or collection name: characters invalid in names stripped, singularised, first letter upper-cased. */
  private typeNameFromTitle(title: string): string | undefined {
    const stripped = title.replace(/[^_0-9A-Za-z]/g, '').replace(/^[0-9]+/, '');
    return stripped === '' || stripped.startsWith('__') ? undefined : upperFirst(singularize(stripped));
  }

  private reader(file: JsonFile): ShapeReader {
    return { file, sink: this.sink };
  }

  // ---- collections: types ----

  private buildCollection(candidate: Candidate): void {
    const { info, file } = candidate;
    const relationships = this.readRelationships(candidate);
    const objectInfo = this.buildObjectTypes(info.typeName, candidate.properties, file, relationships);
    info.fields = objectInfo.fields;
    this.documentTypes.set(info.typeName, this.types.get(info.typeName) as IrObjectType);

    const typeRef = named(info.typeName);
    const queryArg = { name: 'query', type: named(info.queryInputName) };
    const sortByName = `${info.typeName}SortByInput`;
    if (this.types.has(sortByName)) info.sortByInputName = sortByName;
    const pluralArgs = [queryArg, { name: 'limit', type: named('Int'), defaultValue: 100 }];
    if (info.sortByInputName) pluralArgs.push({ name: 'sortBy', type: named(info.sortByInputName) });
    addField(this.query, { name: info.singularField, type: typeRef, args: [queryArg] });
    addField(this.query, { name: info.pluralField, type: nonNull(listOf(typeRef)), args: pluralArgs });

    const insert = named(info.insertInputName);
    const set = { name: 'set', type: nonNull(named(info.updateInputName)) };
    const data = { name: 'data', type: nonNull(insert) };
    const m = info.mutations;
    addField(this.mutation, { name: m.insertOne, type: typeRef, args: [data] });
    addField(this.mutation, { name: m.insertMany, type: named('InsertManyPayload'), args: [{ name: 'data', type: nonNull(listOf(nonNull(insert))) }] });
    addField(this.mutation, { name: m.updateOne, type: typeRef, args: [queryArg, set] });
    addField(this.mutation, { name: m.updateMany, type: named('UpdateManyPayload'), args: [queryArg, set] });
    addField(this.mutation, { name: m.upsertOne, type: typeRef, args: [queryArg, data] });
    addField(this.mutation, { name: m.replaceOne, type: typeRef, args: [queryArg, data] });
    addField(this.mutation, { name: m.deleteOne, type: typeRef, args: [{ name: 'query', type: nonNull(named(info.queryInputName)) }] });
    addField(this.mutation, { name: m.deleteMany, type: named('DeleteManyPayload'), args: [queryArg] });
  }

  /**
   * Builds an object type with its query, insert and update inputs (and, for a collection, its sort
   * enum and relation inputs), then the embedded types below it. The names of a collection's own
   * types were claimed in the first pass; embedded names are claimed here.
   */
  private buildObjectTypes(typeName: string, properties: PropertyShape[], file: JsonFile, relationships?: Map<string, RelationshipDecl>): ObjectTypeInfo {
    const isCollection = relationships !== undefined;
    const info: ObjectTypeInfo = {
      typeName, queryInputName: `${typeName}QueryInput`, insertInputName: `${typeName}InsertInput`, updateInputName: `${typeName}UpdateInput`, fields: [],
    };
    const object: IrObjectType = { kind: 'object', name: typeName, fields: new Map() };
    const queryInput: IrInputType = { kind: 'input', name: info.queryInputName, fields: new Map() };
    const insertInput: IrInputType = { kind: 'input', name: info.insertInputName, fields: new Map() };
    const updateInput: IrInputType = { kind: 'input', name: info.updateInputName, fields: new Map() };
    const sortValues: string[] = [];
    for (const t of [object, queryInput, insertInput, updateInput]) this.types.set(t.name, t);
    const sortByName = `${typeName}SortByInput`;
    if (isCollection) this.types.set(sortByName, { kind: 'enum', name: sortByName, values: sortValues });
    const embeddedToBuild: { name: string; properties: PropertyShape[]; field: FieldInfo }[] = [];

    for (const property of properties) {
      const { shape, name, required } = property;
      const clashes: string[] = [];
      const addInput = (input: IrInputType, fieldName: string, type: TypeRef) => {
        if (input.fields.has(fieldName)) clashes.push(`${input.name}.${fieldName}`);
        else input.fields.set(fieldName, { name: fieldName, type, args: [] });
      };
      const element = shape.kind === 'array' ? shape.items : shape;
      const isList = shape.kind === 'array';
      const field: FieldInfo = { name, sourceKey: property.key, kind: 'scalar', bsonType: 'object', isList, required };
      const relationship = relationships?.get(property.key);

      if (element.kind === 'object') {
        const embeddedName = `${typeName}${upperFirst(singularize(name))}`;
        const embeddedNames = [embeddedName, `${embeddedName}QueryInput`, `${embeddedName}InsertInput`, `${embeddedName}UpdateInput`];
        const taken = embeddedNames.find((n) => this.typeOwners.has(n));
        if (taken) {
          this.sink.at(file, property.path, 'error', 'graphql/duplicate-type-name',
            `Property "${property.key}" is not exposed in GraphQL: its embedded type name "${taken}" is already used by ${this.typeOwners.get(taken)}.`,
            { target: 'key', data: { typeName: taken } });
          continue;
        }
        for (const n of embeddedNames) this.typeOwners.set(n, `the embedded field ${typeName}.${name}`);
        field.kind = 'embedded';
        const wrap = (t: string) => (isList ? listOf(named(t)) : named(t));
        object.fields.set(name, { name, type: nonNullIf(required, wrap(embeddedName)), args: [] });
        addInput(queryInput, name, wrap(`${embeddedName}QueryInput`));
        if (isList) {
          addInput(queryInput, `${name}_in`, wrap(`${embeddedName}QueryInput`));
          addInput(queryInput, `${name}_nin`, wrap(`${embeddedName}QueryInput`));
        }
        addInput(queryInput, `${name}_exists`, named('Boolean'));
        addInput(insertInput, name, nonNullIf(required, wrap(`${embeddedName}InsertInput`)));
        addInput(updateInput, name, wrap(`${embeddedName}UpdateInput`));
        addInput(updateInput, `${name}_unset`, named('Boolean'));
        embeddedToBuild.push({ name: embeddedName, properties: element.properties, field });
      } else {
        field.scalarType = element.scalar;
        field.bsonType = element.bsonType;
        const enumType = relationship ? undefined : this.enumTypeFor(typeName, property, element.enumValues, file);
        if (enumType) field.enum = enumType;
        const scalar = named(enumType?.typeName ?? element.scalar);
        const relationInputName = relationship && `${typeName}${upperFirst(name)}RelationInput`;
        const relationInputOwner = relationInputName && this.typeOwners.get(relationInputName);
        if (relationship && relationInputOwner) {
          this.sink.at(file, property.path, 'error', 'graphql/duplicate-type-name',
            `The relationship of "${property.key}" is not generated: the type name "${relationInputName}" is already used by ${relationInputOwner}.`,
            { target: 'key', data: { typeName: relationInputName } });
        }
        if (relationship && relationInputName && !relationInputOwner) {
          this.typeOwners.set(relationInputName, `the relationship ${typeName}.${name}`);
          const foreign = relationship.target.info;
          const rel: RelationshipInfo = {
            target: relationship.ref, targetTypeName: foreign.typeName, sourceKey: relationship.sourceKey,
            foreignKey: relationship.foreignKey, isList: relationship.isList, relationInputName,
          };
          field.kind = 'relationship';
          field.relationship = rel;
          const many = (t: TypeRef) => (rel.isList ? listOf(t) : t);
          object.fields.set(name, { name, type: nonNullIf(required, many(named(rel.targetTypeName))), args: [] });
          addInput(queryInput, name, many(named(foreign.queryInputName)));
          if (rel.isList) {
            addInput(queryInput, `${name}_in`, many(named(foreign.queryInputName)));
            addInput(queryInput, `${name}_nin`, many(named(foreign.queryInputName)));
          }
          addInput(queryInput, `${name}_exists`, named('Boolean'));
          addInput(insertInput, name, nonNullIf(required, named(relationInputName)));
          addInput(updateInput, name, named(relationInputName));
          addInput(updateInput, `${name}_unset`, named('Boolean'));
          if (!rel.isList) sortValues.push(...sortValuesOf(name));
          this.types.set(relationInputName, {
            kind: 'input', name: relationInputName, fields: new Map([
              ['link', { name: 'link', type: many(scalar), args: [] }],
              ['create', { name: 'create', type: many(named(foreign.insertInputName)), args: [] }],
            ]),
          });
        } else if (isList) {
          object.fields.set(name, { name, type: nonNullIf(required, listOf(scalar)), args: [] });
          for (const op of ['', '_in', '_nin']) addInput(queryInput, `${name}${op}`, listOf(scalar));
          addInput(queryInput, `${name}_exists`, named('Boolean'));
          addInput(insertInput, name, nonNullIf(required, listOf(scalar)));
          addInput(updateInput, name, listOf(scalar));
          addInput(updateInput, `${name}_unset`, named('Boolean'));
        } else {
          object.fields.set(name, { name, type: nonNullIf(required, scalar), args: [] });
          addInput(queryInput, name, scalar);
          addInput(queryInput, `${name}_ne`, scalar);
          if (orderedScalars.has(element.scalar)) {
            for (const op of ['_gt', '_gte', '_lt', '_lte']) addInput(queryInput, `${name}${op}`, scalar);
            for (const op of ['_in', '_nin']) addInput(queryInput, `${name}${op}`, listOf(scalar));
            sortValues.push(...sortValuesOf(name));
          }
          addInput(queryInput, `${name}_exists`, named('Boolean'));
          // The server fills in a missing objectId `_id`, so a required one is still optional on insert.
          const serverFilled = isCollection && property.key === '_id' && element.scalar === 'ObjectId';
          addInput(insertInput, name, nonNullIf(required && !serverFilled, scalar));
          addInput(updateInput, name, scalar);
          if (incrementableScalars.has(element.scalar)) addInput(updateInput, `${name}_inc`, scalar);
          addInput(updateInput, `${name}_unset`, named('Boolean'));
        }
      }
      if (clashes.length > 0) {
        this.sink.at(file, property.path, 'warning', 'graphql/input-field-clash',
          `Some input fields of "${property.key}" are already generated for another property and keep that meaning: ${clashes.join(', ')}.`,
          { target: 'key', data: { fields: clashes } });
      }
      info.fields.push(field);
    }
    const logical = [{ name: 'AND', type: listOf(nonNull(named(info.queryInputName))), args: [] }, { name: 'OR', type: listOf(nonNull(named(info.queryInputName))), args: [] }];
    for (const f of logical) if (!queryInput.fields.has(f.name)) queryInput.fields.set(f.name, f);
    if (isCollection) {
      const unique = [...new Set(sortValues)];
      if (unique.length === 0) this.types.delete(sortByName);
      else sortValues.splice(0, sortValues.length, ...unique);
    }
    for (const embedded of embeddedToBuild) embedded.field.embedded = this.buildObjectTypes(embedded.name, embedded.properties, file);
    return info;
  }

  /**
   * The GraphQL enum of a `string` property with `enum`: `<Type><Field>`, its values the stored strings
   * upper-cased and made valid names. Values that cannot be told apart, or a taken type name, leave the
   * property a String (with a warning).
   */
  private enumTypeFor(typeName: string, property: PropertyShape, storedValues: string[] | undefined, file: JsonFile): FieldInfo['enum'] {
    if (!storedValues) return undefined;
    const enumName = `${typeName}${upperFirst(property.name)}`;
    const values: Array<{ name: string; stored: string }> = [];
    const storedByName = new Map<string, string>();
    for (const stored of storedValues) {
      const name = enumValueName(stored);
      const clash = name === undefined ? undefined : storedByName.get(name);
      if (name === undefined || (clash !== undefined && clash !== stored)) {
        this.sink.at(file, [...property.path, 'enum'], 'warning', 'graphql/enum-value-clash', name === undefined
          ? `Property "${property.key}" stays a String in GraphQL: the enum value ${JSON.stringify(stored)} has no characters usable in a GraphQL enum value.`
          : `Property "${property.key}" stays a String in GraphQL: the enum values ${JSON.stringify(clash)} and ${JSON.stringify(stored)} both become ${name}.`);
        return undefined;
      }
      if (clash === undefined) { storedByName.set(name, stored); values.push({ name, stored }); }
    }
    const owner = this.typeOwners.get(enumName);
    if (owner) {
      this.sink.at(file, [...property.path, 'enum'], 'warning', 'graphql/duplicate-type-name',
        `Property "${property.key}" stays a String in GraphQL: its enum type name "${enumName}" is already used by ${owner}.`, { data: { typeName: enumName } });
      return undefined;
    }
    this.typeOwners.set(enumName, `the enum of ${typeName}.${property.name}`);
    this.types.set(enumName, { kind: 'enum', name: enumName, values: values.map((v) => v.name), storedValues: values.map((v) => v.stored) });
    return { typeName: enumName, values };
  }

  private readRelationships(candidate: Candidate): Map<string, RelationshipDecl> {
    const result = new Map<string, RelationshipDecl>();
    const file = candidate.collection.relationships;
    if (!file || file.value === undefined || file.syntaxErrors.length > 0) return result;
    if (!isObject(file.value)) {
      this.sink.atRange(file, file.startRange, 'warning', 'graphql/invalid-relationships', 'relationships.json must be an object of source field → relationship.');
      return result;
    }
    const propertyByKey = new Map(candidate.properties.map((p) => [p.key, p]));
    for (const [key, decl] of Object.entries(file.value)) {
      if (!isObject(decl)) {
        this.sink.at(file, [key], 'warning', 'graphql/invalid-relationship', `Relationship "${key}" must be an object with "ref", "source_key", "foreign_key" and "is_list".`);
        continue;
      }
      const ref = decl.ref;
      const match = typeof ref === 'string' ? /^#\/relationship\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(ref) : null;
      if (!match) {
        this.sink.at(file, [key, 'ref'], 'error', 'graphql/invalid-relationship-ref',
          `Relationship "${key}" needs "ref": "#/relationship/<data source>/<database>/<collection>".`);
        continue;
      }
      const [, dataSource, database, collection] = match;
      const target = this.candidates.get(collectionKey(dataSource, database, collection));
      if (!target) {
        this.sink.at(file, [key, 'ref'], 'error', 'graphql/unknown-relationship-target',
          `Relationship "${key}" is not generated: ${this.describeMissingTarget(dataSource, database, collection)}`,
          { data: { dataSource, database, collection } });
        continue;
      }
      const sourceKey = typeof decl.source_key === 'string' ? decl.source_key : key;
      const property = propertyByKey.get(key) ?? propertyByKey.get(sourceKey);
      if (!property) {
        this.sink.at(file, [key], 'warning', 'graphql/unknown-relationship-field',
          `Relationship "${key}" is not generated: the collection schema has no GraphQL field "${key}".`, { target: 'key' });
        continue;
      }
      const element = property.shape.kind === 'array' ? property.shape.items : property.shape;
      if (element.kind !== 'scalar') {
        this.sink.at(file, [key], 'warning', 'graphql/unsupported-relationship-field',
          `Relationship "${key}" is not generated: its source field is an embedded object, not a key value.`, { target: 'key' });
        continue;
      }
      if (typeof decl.foreign_key !== 'string' || decl.foreign_key === '') {
        this.sink.at(file, [key, 'foreign_key'], 'error', 'graphql/invalid-relationship', `Relationship "${key}" needs a "foreign_key" naming a field of ${target.info.typeName}.`);
        continue;
      }
      const foreignKey = decl.foreign_key;
      if (!target.properties.some((p) => p.key === foreignKey)) {
        this.sink.at(file, [key, 'foreign_key'], 'warning', 'graphql/unknown-relationship-foreign-key',
          `"${foreignKey}" is not a property of the ${target.info.typeName} schema.`, { data: { foreignKey } });
      }
      const isList = decl.is_list === true;
      if (isList !== (property.shape.kind === 'array')) {
        this.sink.at(file, [key, 'is_list'], 'warning', 'graphql/relationship-list-mismatch', isList
          ? `Relationship "${key}" is to-many, but its source field is not an array.`
          : `Relationship "${key}" is to-one, but its source field is an array; set "is_list": true for a to-many relationship.`);
      }
      result.set(property.key, { target, ref: { dataSource, database, collection }, sourceKey, foreignKey, isList });
    }
    return result;
  }

  private describeMissingTarget(dataSource: string, database: string, collection: string): string {
    const source = this.app.dataSources.find((d) => d.name === dataSource);
    if (!source) return `there is no data source "${dataSource}".`;
    if (!isClusterSource(source)) return `data source "${dataSource}" is not a linked cluster.`;
    const target = source.collections.find((c) => c.database === database && c.collection === collection);
    if (!target) return `there is no collection ${collectionKey(dataSource, database, collection)}.`;
    if (!target.schema) return `collection ${collectionKey(dataSource, database, collection)} has no schema.`;
    return `collection ${collectionKey(dataSource, database, collection)} has no GraphQL type.`;
  }

  private addSharedPayloads(): void {
    const payload = (name: string, fields: [string, TypeRef][]) => {
      this.types.set(name, { kind: 'object', name, fields: new Map(fields.map(([n, type]) => [n, { name: n, type, args: [] }])) });
    };
    payload('InsertManyPayload', [['insertedIds', nonNull(listOf(named('ObjectId')))]]);
    payload('UpdateManyPayload', [['matchedCount', nonNull(named('Int'))], ['modifiedCount', nonNull(named('Int'))]]);
    payload('DeleteManyPayload', [['deletedCount', nonNull(named('Int'))]]);
  }

  private generatedTypeNames(): { input: string[]; output: string[] } {
    const input: string[] = [], output: string[] = [];
    for (const t of this.types.values()) {
      if (t.kind === 'object') { if (t.name !== 'Query' && t.name !== 'Mutation') output.push(t.name); } else input.push(t.name);
    }
    return { input, output };
  }

  // ---- custom resolvers ----

  private addCustomResolvers(generated: { input: string[]; output: string[] }): void {
    const generatedInputs = new Set(generated.input), generatedOutputs = new Set(generated.output);
    const resolvers = [...this.app.graphql.customResolvers].sort((a, b) => compareKeys([a.file.relPath, a.fieldName], [b.file.relPath, b.fieldName]));
    const resolverFields = new Set<string>();
    for (const resolver of resolvers) {
      const staged = new StagedTypes(this.typeOwners);
      const file = resolver.file;
      const parent = resolver.onType === 'Query' ? this.query : resolver.onType === 'Mutation' ? this.mutation : this.documentTypes.get(resolver.onType);
      if (!parent) {
        // A computed field whose document type lost its schema stays stored on the platform: a warning, left out here.
        this.sink.at(file, ['on_type'], resolver.onType === '' ? 'error' : 'warning', 'graphql/unknown-resolver-parent',
          `"on_type" must be Query, Mutation or a generated document type; "${resolver.onType}" is none of these, so ${resolver.onType || 'the resolver'}.${resolver.fieldName} is left out of the local API.`, { data: { onType: resolver.onType } });
        continue;
      }
      if (!isValidGraphqlName(resolver.fieldName)) {
        this.sink.at(file, ['field_name'], 'error', 'graphql/invalid-resolver-field-name', `"${resolver.fieldName}" is not a valid GraphQL field name.`);
        continue;
      }
      const fieldKey = `${parent.name}.${resolver.fieldName}`;
      if (resolverFields.has(fieldKey)) {
        this.sink.at(file, ['field_name'], 'error', 'graphql/duplicate-resolver-field', `Another custom resolver already defines ${fieldKey}.`, { data: { field: fieldKey } });
        continue;
      }
      const context: ResolverContext = { resolver, file, staged, generatedInputs, generatedOutputs };
      const input = this.resolverInput(context);
      const payload = this.resolverPayload(context);
      if (input === null || payload === null) continue;

      resolverFields.add(fieldKey);
      staged.commit(this.types);
      if (payload.typeName === defaultPayloadName && !this.types.has(defaultPayloadName)) {
        this.types.set(defaultPayloadName, { kind: 'object', name: defaultPayloadName, fields: new Map([['status', { name: 'status', type: nonNull(named('String')), args: [] }]]) });
      }
      // The validator (resolver/shadows-generated-field) tells the user; generation just records it.
      const overrides = parent.fields.has(resolver.fieldName);
      const wrap = (ref: { typeName: string; isList: boolean }) => (ref.isList ? listOf(named(ref.typeName)) : named(ref.typeName));
      parent.fields.set(resolver.fieldName, { name: resolver.fieldName, type: wrap(payload), args: input ? [{ name: 'input', type: wrap(input) }] : [] });
      this.resolvers.push({
        parent: parent.name,
        fieldName: resolver.fieldName,
        functionName: resolver.functionName,
        hasInput: input !== undefined,
        ...(input ? { inputTypeName: input.typeName, input } : {}),
        payload,
        overridesGeneratedField: overrides,
        config: resolver,
      });
    }
  }

  /** The input argument's type; undefined for none, null when the resolver is invalid (already reported). */
  private resolverInput(context: ResolverContext): ResolverTypeRef | undefined | null {
    const { resolver, file } = context;
    const format = resolver.inputTypeFormat;
    if (format === '') return undefined;
    if (resolver.inputType === undefined) {
      this.sink.at(file, ['input_type_format'], 'error', 'graphql/missing-resolver-type', `"input_type_format" is "${format}" but there is no "input_type".`);
      return null;
    }
    if (format === 'custom') {
      if (!isObject(resolver.inputType) || isArraySchema(resolver.inputType)) {
        this.sink.at(file, ['input_type'], 'error', 'graphql/invalid-custom-type', 'A custom input type must be an object schema with a "title" and at least one property.');
        return null;
      }
      const typeName = this.buildCustomType(context, resolver.inputType, ['input_type'], 'input', undefined);
      return typeName ? { kind: 'custom', typeName, isList: false } : null;
    }
    return this.namedResolverType(context, 'input', format, resolver.inputType);
  }

  /** The payload type; null when the resolver is invalid (already reported). */
  private resolverPayload(context: ResolverContext): GeneratedResolver['payload'] | null {
    const { resolver, file } = context;
    const format = resolver.payloadTypeFormat;
    if (resolver.payloadType === undefined || format === '') return { kind: 'default', typeName: defaultPayloadName, isList: false };
    if (format !== 'custom') return this.namedResolverType(context, 'payload', format, resolver.payloadType);
    const schema = resolver.payloadType;
    const invalid = () => {
      this.sink.at(file, ['payload_type'], 'error', 'graphql/invalid-custom-type',
        'A custom payload type must be an object schema with a "title" and at least one property, or an array of such objects.');
      return null;
    };
    if (!isObject(schema)) return invalid();
    if (!isArraySchema(schema)) {
      const typeName = this.buildCustomType(context, schema, ['payload_type'], 'object', undefined);
      return typeName ? { kind: 'custom', typeName, isList: false } : null;
    }
    // A one-element array of schemas in "items" means that element (the platform reads it so).
    const oneItem = Array.isArray(schema.items) && schema.items.length === 1;
    const items = oneItem ? (schema.items as unknown[])[0] : schema.items;
    if (!isObject(items) || isArraySchema(items)) return invalid();
    // Items titled → [<items title>]; title only on the array → [<Title>Item] (graphql.md §10.2).
    const arrayTitle = typeof items.title === 'string' ? undefined : schema.title;
    const typeName = this.buildCustomType(context, items, oneItem ? ['payload_type', 'items', 0] : ['payload_type', 'items'], 'object', arrayTitle);
    return typeName ? { kind: 'custom', typeName, isList: true } : null;
  }

  private namedResolverType(context: ResolverContext, side: 'input' | 'payload', format: string, value: unknown): ResolverTypeRef | null {
    const { file } = context;
    const key = `${side}_type`;
    const isList = format.endsWith('-list');
    if (format === 'scalar' || format === 'scalar-list') {
      const scalar = typeof value === 'string' ? scalarForBsonType(value) : undefined;
      if (!scalar) {
        this.sink.at(file, [key], 'error', 'graphql/unknown-resolver-scalar', `${describeValue(value)} is not a bsonType with a GraphQL scalar (string, int, long, double, decimal, bool, date, objectId, …).`);
        return null;
      }
      return { kind: 'scalar', typeName: scalar, isList };
    }
    if (format === 'generated' || format === 'generated-list') {
      const names = side === 'input' ? context.generatedInputs : context.generatedOutputs;
      if (typeof value !== 'string' || !names.has(value)) {
        // The platform keeps a resolver whose generated type lost its schema; locally it cannot be typed.
        this.sink.at(file, [key], 'warning', 'graphql/unknown-generated-type', side === 'input'
          ? `${describeValue(value)} is not a generated input type (such as a <Type>InsertInput or <Type>QueryInput); ${context.resolver.onType}.${context.resolver.fieldName} is left out of the local API.`
          : `${describeValue(value)} is not a generated document type; ${context.resolver.onType}.${context.resolver.fieldName} is left out of the local API.`, { data: { side } });
        return null;
      }
      return { kind: 'generated', typeName: value, isList };
    }
    this.sink.at(file, [`${side}_type_format`], 'error', 'graphql/invalid-type-format',
      `"${format}" is not a type format; use scalar, scalar-list, generated, generated-list, custom or "".`);
    return null;
  }

  /**
   * Builds a custom input or output type (and its nested types) into the resolver's staging area.
   * `arrayTitle` names the type `<Title>Item` when the title sits on an enclosing array.
   */
  private buildCustomType(context: ResolverContext, schema: Record<string, unknown>, path: JSONPath, kind: 'input' | 'object', arrayTitle: unknown): string | undefined {
    const { file } = context;
    const declared = schema.bsonType ?? schema.type;
    const title = arrayTitle ?? schema.title;
    const titlePath = arrayTitle !== undefined ? path.slice(0, -1).concat('title') : [...path, 'title'];
    if (declared !== 'object' && !(declared === undefined && isObject(schema.properties))) {
      this.sink.at(file, declared === undefined ? path : [...path, schema.bsonType !== undefined ? 'bsonType' : 'type'], 'error', 'graphql/invalid-custom-type',
        'A custom type must be an object schema ("bsonType": "object").');
      return undefined;
    }
    if (typeof title !== 'string' || title === '') {
      this.sink.at(file, titlePath, 'error', 'graphql/invalid-custom-type', 'A custom type needs a "title", which names the GraphQL type.');
      return undefined;
    }
    const base = this.typeNameFromTitle(title);
    if (!base) {
      this.sink.at(file, titlePath, 'error', 'graphql/invalid-type-name', `"${title}" cannot be turned into a GraphQL type name.`);
      return undefined;
    }
    const properties = readObjectProperties(this.reader(file), schema, path);
    // Observed: title "RisksPayload" on the array gives items `RisksPayloadItem` but nested `RisksPayloadPrecedent`.
    const typeName = arrayTitle !== undefined ? `${base}Item` : base;
    return this.buildCustomObject(context, typeName, base, properties, path, kind, titlePath);
  }

  /** `nestedPrefix` starts the names of nested object types: `<prefix><Field singular>`. */
  private buildCustomObject(
    context: ResolverContext, typeName: string, nestedPrefix: string, properties: PropertyShape[], path: JSONPath, kind: 'input' | 'object', namePath: JSONPath,
  ): string | undefined {
    const { file, staged } = context;
    const owner = staged.ownerOf(typeName);
    if (owner) {
      this.sink.at(file, namePath, 'error', 'graphql/duplicate-type-name', `The custom type name "${typeName}" is already used by ${owner}.`, { data: { typeName } });
      return undefined;
    }
    if (properties.length === 0) {
      this.sink.at(file, [...path, 'properties'], 'error', 'graphql/invalid-custom-type', `Custom type "${typeName}" needs at least one property with a GraphQL type.`);
      return undefined;
    }
    const fields = new Map<string, IrField>();
    staged.add(kind === 'input' ? { kind, name: typeName, fields } : { kind, name: typeName, fields }, `the custom resolver ${context.resolver.file.relPath}`);
    for (const property of properties) {
      const element = property.shape.kind === 'array' ? property.shape.items : property.shape;
      const elementName = element.kind === 'object' ? `${nestedPrefix}${upperFirst(singularize(property.name))}` : element.scalar;
      if (element.kind === 'object' && !this.buildCustomObject(context, elementName, elementName, element.properties, property.path, kind, property.path)) return undefined;
      const ref = property.shape.kind === 'array' ? listOf(named(elementName)) : named(elementName);
      fields.set(property.name, { name: property.name, type: nonNullIf(property.required, ref), args: [] });
    }
    return typeName;
  }

  private reportEmptyApi(): void {
    const file = this.app.graphql.config ?? this.app.rootFile;
    this.sink.atRange(file, file.startRange, 'information', 'graphql/empty-api',
      'The GraphQL API has no query fields: no linked-cluster collection has a schema with a GraphQL type, and no custom resolver is on Query.');
  }
}

interface ResolverContext {
  resolver: CustomResolver;
  file: JsonFile;
  staged: StagedTypes;
  generatedInputs: ReadonlySet<string>;
  generatedOutputs: ReadonlySet<string>;
}

/** Custom types of one resolver, kept apart until the whole resolver is known to be valid. */
class StagedTypes {
  private readonly types: IrType[] = [];
  private readonly owners = new Map<string, string>();
  constructor(private readonly committedOwners: Map<string, string>) {}

  ownerOf(name: string): string | undefined {
    return this.committedOwners.get(name) ?? this.owners.get(name);
  }

  add(type: IrType, owner: string): void {
    this.types.push(type);
    this.owners.set(type.name, owner);
  }

  commit(into: Map<string, IrType>): void {
    for (const t of this.types) into.set(t.name, t);
    for (const [name, owner] of this.owners) this.committedOwners.set(name, owner);
  }
}

function addField(type: IrObjectType, field: IrField): void {
  type.fields.set(field.name, field);
}

function sortValuesOf(fieldName: string): string[] {
  const upper = fieldName.toUpperCase();
  return [`${upper}_ASC`, `${upper}_DESC`];
}

/** A stored enum string as a GraphQL enum value: upper-cased, other characters as `_`, never starting with a digit. */
function enumValueName(stored: string): string | undefined {
  const name = stored.toUpperCase().replace(/[^_0-9A-Z]/g, '_');
  if (!/[0-9A-Z]/.test(name)) return undefined;
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

function isArraySchema(schema: Record<string, unknown>): boolean {
  return schema.bsonType === 'array' || schema.type === 'array';
}

function describeValue(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : JSON.stringify(value) ?? String(value);
}

function compareKeys(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}
