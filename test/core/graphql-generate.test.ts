import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  astFromValue, buildSchema, getIntrospectionQuery, graphqlSync, isEnumType, isInputObjectType, isObjectType, isScalarType, isSpecifiedScalarType,
  parse, print, printType, validateSchema, Kind,
  type DefinitionNode, type GraphQLNamedType, type GraphQLSchema,
} from 'graphql';
import { generateSchema } from '../../core/graphql/generate';
import { findCollectionType, sdlForResolverField, sdlForType } from '../../core/graphql/sdl';
import type { GeneratedSchema } from '../../core/graphql/types';
import type { AppModel } from '../../core/model';
import { loadApp } from '../../core/load';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';
import { appPath, graphqlTestApp } from './graphql-app';

// ---- comparing schemas structurally (field order is irrelevant in GraphQL) ----

interface Signature { kind: string; fields?: Record<string, string>; values?: string[] }

/** A type as `{kind, fields: {name: "(arg: T = default): Type"}}` or `{kind, values}`. */
function signatureOf(type: GraphQLNamedType): Signature {
  if (isEnumType(type)) return { kind: 'enum', values: type.getValues().map((v) => v.name).sort() };
  if (isScalarType(type)) return { kind: 'scalar' };
  if (isInputObjectType(type)) {
    return { kind: 'input', fields: Object.fromEntries(Object.values(type.getFields()).map((f) => [f.name, String(f.type)])) };
  }
  if (isObjectType(type)) {
    return {
      kind: 'object',
      fields: Object.fromEntries(Object.values(type.getFields()).map((f) => {
        const args = f.args.map((a) => {
          const dflt = a.defaultValue === undefined ? '' : ` = ${print(astFromValue(a.defaultValue, a.type)!)}`;
          return `${a.name}: ${String(a.type)}${dflt}`;
        }).sort();
        return [f.name, `${args.length ? `(${args.join(', ')})` : ''}: ${String(f.type)}`];
      })),
    };
  }
  throw new Error(`unexpected type kind of ${type.name}`);
}

function userTypes(schema: GraphQLSchema): Map<string, GraphQLNamedType> {
  return new Map(Object.values(schema.getTypeMap()).filter((t) => !t.name.startsWith('__') && !isSpecifiedScalarType(t)).map((t) => [t.name, t]));
}

/** The generated schema has exactly the types, fields, arguments, defaults and nullability of `expectedSdl`. */
function assertSchemaEquals(actual: GraphQLSchema, expectedSdl: string): void {
  const expected = buildSchema(expectedSdl);
  const actualTypes = userTypes(actual), expectedTypes = userTypes(expected);
  assert.deepEqual([...actualTypes.keys()].sort(), [...expectedTypes.keys()].sort(), 'type names');
  for (const [name, type] of expectedTypes) assert.deepEqual(signatureOf(actualTypes.get(name)!), signatureOf(type), `type ${name}`);
}

/** Each type defined in `sdl` (which may refer to types it does not define) matches the generated one. */
function assertTypes(actual: GraphQLSchema, sdl: string): void {
  for (const def of parse(sdl).definitions) {
    const name = definitionName(def);
    const type = actual.getType(name);
    assert.ok(type, `type ${name} exists`);
    assert.deepEqual(signatureOf(type), signatureOfDefinition(def), `type ${name}`);
  }
}

function definitionName(def: DefinitionNode): string {
  if ('name' in def && def.name) return def.name.value;
  throw new Error('definition without a name');
}

function signatureOfDefinition(def: DefinitionNode): Signature {
  switch (def.kind) {
    case Kind.ENUM_TYPE_DEFINITION: return { kind: 'enum', values: (def.values ?? []).map((v) => v.name.value).sort() };
    case Kind.INPUT_OBJECT_TYPE_DEFINITION:
      return { kind: 'input', fields: Object.fromEntries((def.fields ?? []).map((f) => [f.name.value, print(f.type)])) };
    case Kind.OBJECT_TYPE_DEFINITION:
      return {
        kind: 'object',
        fields: Object.fromEntries((def.fields ?? []).map((f) => {
          const args = (f.arguments ?? []).map((a) => `${a.name.value}: ${print(a.type)}${a.defaultValue ? ` = ${print(a.defaultValue)}` : ''}`).sort();
          return [f.name.value, `${args.length ? `(${args.join(', ')})` : ''}: ${print(f.type)}`];
        })),
      };
    default: throw new Error(`unexpected definition ${def.kind}`);
  }
}

function codes(generated: GeneratedSchema): string[] {
  return generated.diagnostics.map((d) => d.code).sort();
}

function diagnostic(generated: GeneratedSchema, code: string) {
  const found = generated.diagnostics.filter((d) => d.code === code);
  assert.equal(found.length, 1, `exactly one ${code} in ${JSON.stringify(generated.diagnostics.map((d) => d.code))}`);
  return found[0];
}

function fileOf(app: AppModel, relPath: string) {
  const file = app.files.get(appPath(relPath));
  assert.ok(file, relPath);
  return file;
}

// ---- the worked example of graphql.md §12 ----

const taskSchemaPath = 'data_sources/mongodb-atlas/todo/Task/schema.json';
const taskSchema = {
  title: 'Task', bsonType: 'object', required: ['_id', 'name'],
  properties: {
    _id: { bsonType: 'objectId' }, name: { bsonType: 'string' },
    isComplete: { bsonType: 'bool' }, priority: { bsonType: 'int' },
    dueDate: { bsonType: 'date' },
  },
};

const taskSdl = `
scalar ObjectId
scalar DateTime

type Task {
  _id: ObjectId!          # non-null because required
  dueDate: DateTime
  isComplete: Boolean
  name: String!
  priority: Int
}

input TaskQueryInput {
  _id: ObjectId  _id_ne: ObjectId  _id_gt: ObjectId  _id_gte: ObjectId  _id_lt: ObjectId  _id_lte: ObjectId
  _id_in: [ObjectId]  _id_nin: [ObjectId]  _id_exists: Boolean
  name: String  name_ne: String  name_gt: String  name_gte: String  name_lt: String  name_lte: String
  name_in: [String]  name_nin: [String]  name_exists: Boolean
  isComplete: Boolean  isComplete_ne: Boolean  isComplete_exists: Boolean
  priority: Int  priority_ne: Int  priority_gt: Int  priority_gte: Int  priority_lt: Int  priority_lte: Int
  priority_in: [Int]  priority_nin: [Int]  priority_exists: Boolean
  dueDate: DateTime  dueDate_ne: DateTime  dueDate_gt: DateTime  dueDate_gte: DateTime  dueDate_lt: DateTime
  dueDate_lte: DateTime  dueDate_in: [DateTime]  dueDate_nin: [DateTime]  dueDate_exists: Boolean
  AND: [TaskQueryInput!]
  OR: [TaskQueryInput!]
}

input TaskInsertInput { _id: ObjectId  name: String!  isComplete: Boolean  priority: Int  dueDate: DateTime }

input TaskUpdateInput {
  _id: ObjectId  _id_unset: Boolean
  name: String  name_unset: Boolean
  isComplete: Boolean  isComplete_unset: Boolean
  priority: Int  priority_inc: Int  priority_unset: Boolean
  dueDate: DateTime  dueDate_unset: Boolean
}

enum TaskSortByInput { _ID_ASC _ID_DESC NAME_ASC NAME_DESC PRIORITY_ASC PRIORITY_DESC DUEDATE_ASC DUEDATE_DESC }

type InsertManyPayload { insertedIds: [ObjectId]! }
type UpdateManyPayload { matchedCount: Int!  modifiedCount: Int! }
type DeleteManyPayload { deletedCount: Int! }

type Query {
  task(query: TaskQueryInput): Task
  tasks(query: TaskQueryInput, limit: Int = 100, sortBy: TaskSortByInput): [Task]!
}

type Mutation {
  insertOneTask(data: TaskInsertInput!): Task
  insertManyTasks(data: [TaskInsertInput!]!): InsertManyPayload
  updateOneTask(query: TaskQueryInput, set: TaskUpdateInput!): Task
  updateManyTasks(query: TaskQueryInput, set: TaskUpdateInput!): UpdateManyPayload
  upsertOneTask(query: TaskQueryInput, data: TaskInsertInput!): Task
  replaceOneTask(query: TaskQueryInput, data: TaskInsertInput!): Task
  deleteOneTask(query: TaskQueryInput!): Task
  deleteManyTasks(query: TaskQueryInput): DeleteManyPayload
}
`;

const taskResolvers = {
  'graphql/custom_resolvers/query_taskSummary.json': {
    on_type: 'Query', field_name: 'taskSummary', function_name: 'taskSummary',
    input_type_format: 'custom',
    input_type: { title: 'TaskSummaryInput', bsonType: 'object', required: ['owner', 'status'], properties: { owner: { bsonType: 'string' }, status: { bsonType: 'string' } } },
    payload_type_format: 'custom',
    payload_type: {
      title: 'TaskSummary', bsonType: 'object', required: ['owner', 'status', 'count'],
      properties: { owner: { bsonType: 'string' }, status: { bsonType: 'string' }, count: { bsonType: 'int' } },
    },
  },
  'graphql/custom_resolvers/mutation_renameTask.json': {
    on_type: 'Mutation', field_name: 'renameTask', function_name: 'renameTask',
    input_type_format: 'custom',
    input_type: { title: 'RenameTaskInput', bsonType: 'object', required: ['taskId', 'name'], properties: { taskId: { bsonType: 'objectId' }, name: { bsonType: 'string' } } },
    payload_type_format: 'generated', payload_type: 'Task',
  },
  'graphql/custom_resolvers/task_history.json': {
    on_type: 'Task', field_name: 'history', function_name: 'taskHistory',
    input_type_format: '', payload_type_format: 'custom',
    payload_type: {
      bsonType: 'array',
      items: { title: 'TaskHistoryEntry', bsonType: 'object', required: ['at', 'note'], properties: { at: { bsonType: 'string' }, note: { bsonType: 'string' } } },
    },
  },
  'graphql/custom_resolvers/mutation_archiveCompletedTasks.json': {
    on_type: 'Mutation', field_name: 'archiveCompletedTasks', function_name: 'archiveCompletedTasks', input_type_format: '',
  },
};

describe('worked example: Task (graphql.md §12)', () => {
  test('generates exactly the schema of §12.2', () => {
    const generated = generateSchema(graphqlTestApp({ [taskSchemaPath]: taskSchema }));
    assert.deepEqual(generated.diagnostics, []);
    assertSchemaEquals(generated.schema, taskSdl);
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('the embedded checklist variant adds TaskChecklist and its inputs, and no sort value', () => {
    const schema = structuredClone(taskSchema) as typeof taskSchema & { properties: Record<string, unknown> };
    schema.properties.checklist = {
      bsonType: 'array',
      items: { bsonType: 'object', properties: { text: { bsonType: 'string' }, done: { bsonType: 'bool' } } },
    };
    const generated = generateSchema(graphqlTestApp({ [taskSchemaPath]: schema }));
    assert.deepEqual(generated.diagnostics, []);
    const edit = (sdl: string, from: string, to: string) => { assert.ok(sdl.includes(from), from); return sdl.replace(from, to); };
    let expected = edit(taskSdl, 'priority: Int\n}', 'priority: Int\n  checklist: [TaskChecklist]\n}');
    expected = edit(expected, 'AND: [TaskQueryInput!]', `checklist: [TaskChecklistQueryInput]  checklist_in: [TaskChecklistQueryInput]
  checklist_nin: [TaskChecklistQueryInput]  checklist_exists: Boolean
  AND: [TaskQueryInput!]`);
    expected = edit(expected, 'dueDate: DateTime }', 'dueDate: DateTime  checklist: [TaskChecklistInsertInput] }');
    expected = edit(expected, 'dueDate_unset: Boolean', 'dueDate_unset: Boolean\n  checklist: [TaskChecklistUpdateInput]  checklist_unset: Boolean');
    expected += `
type TaskChecklist { text: String  done: Boolean }
input TaskChecklistQueryInput {
  text: String  text_ne: String  text_gt: String  text_gte: String  text_lt: String  text_lte: String
  text_in: [String]  text_nin: [String]  text_exists: Boolean
  done: Boolean  done_ne: Boolean  done_exists: Boolean
  AND: [TaskChecklistQueryInput!]  OR: [TaskChecklistQueryInput!]
}
input TaskChecklistInsertInput { text: String  done: Boolean }
input TaskChecklistUpdateInput { text: String  text_unset: Boolean  done: Boolean  done_unset: Boolean }
`;
    assertSchemaEquals(generated.schema, expected);
    const checklist = generated.types[0].fields.find((f) => f.name === 'checklist')!;
    assert.equal(checklist.kind, 'embedded');
    assert.equal(checklist.isList, true);
    assert.deepEqual(checklist.embedded!.fields.map((f) => [f.name, f.scalarType]), [['text', 'String'], ['done', 'Boolean']]);
    assert.equal(checklist.embedded!.typeName, 'TaskChecklist');
  });

  test('the custom resolvers of §12.3 add exactly the types and fields shown', () => {
    const generated = generateSchema(graphqlTestApp({ [taskSchemaPath]: taskSchema, ...taskResolvers }));
    assert.deepEqual(generated.diagnostics, []);
    assertSchemaEquals(generated.schema, `${taskSdl}
input TaskSummaryInput { owner: String!  status: String! }
type TaskSummary { owner: String!  status: String!  count: Int! }
input RenameTaskInput { taskId: ObjectId!  name: String! }
type TaskHistoryEntry { at: String!  note: String! }
type DefaultPayload { status: String! }

extend type Query    { taskSummary(input: TaskSummaryInput): TaskSummary }
extend type Mutation { renameTask(input: RenameTaskInput): Task
                       archiveCompletedTasks: DefaultPayload }
extend type Task     { history: [TaskHistoryEntry] }
`);
    assert.deepEqual(validateSchema(generated.schema), []);
    const byField = new Map(generated.resolvers.map((r) => [r.fieldName, r]));
    assert.deepEqual([...byField.keys()], ['archiveCompletedTasks', 'renameTask', 'taskSummary', 'history'], 'ordered by file path');
    const { config: _rename, ...rename } = byField.get('renameTask')!;
    assert.deepEqual(rename, {
      parent: 'Mutation', fieldName: 'renameTask', functionName: 'renameTask', hasInput: true, inputTypeName: 'RenameTaskInput',
      input: { kind: 'custom', typeName: 'RenameTaskInput', isList: false },
      payload: { kind: 'generated', typeName: 'Task', isList: false }, overridesGeneratedField: false,
    });
    const { config: _history, ...history } = byField.get('history')!;
    assert.deepEqual(history, {
      parent: 'Task', fieldName: 'history', functionName: 'taskHistory', hasInput: false,
      payload: { kind: 'custom', typeName: 'TaskHistoryEntry', isList: true }, overridesGeneratedField: false,
    });
    assert.deepEqual(byField.get('archiveCompletedTasks')!.payload, { kind: 'default', typeName: 'DefaultPayload', isList: false });
    assert.equal(byField.get('taskSummary')!.parent, 'Query');
    assert.equal(byField.get('taskSummary')!.config.file.relPath, 'graphql/custom_resolvers/query_taskSummary.json');
  });

  test('collection metadata names the root fields, mutations and document keys', () => {
    const generated = generateSchema(graphqlTestApp({ [taskSchemaPath]: taskSchema }));
    const task = findCollectionType(generated, 'mongodb-atlas', 'todo', 'Task')!;
    assert.equal(task.typeName, 'Task');
    assert.equal(task.schemaPath, appPath(taskSchemaPath));
    assert.equal(task.singularField, 'task');
    assert.equal(task.pluralField, 'tasks');
    assert.equal(task.sortByInputName, 'TaskSortByInput');
    assert.deepEqual(task.mutations, {
      insertOne: 'insertOneTask', insertMany: 'insertManyTasks', updateOne: 'updateOneTask', updateMany: 'updateManyTasks',
      upsertOne: 'upsertOneTask', replaceOne: 'replaceOneTask', deleteOne: 'deleteOneTask', deleteMany: 'deleteManyTasks',
    });
    assert.deepEqual(task.fields.map((f) => ({ name: f.name, sourceKey: f.sourceKey, kind: f.kind, scalarType: f.scalarType, bsonType: f.bsonType, isList: f.isList, required: f.required })), [
      { name: '_id', sourceKey: '_id', kind: 'scalar', scalarType: 'ObjectId', bsonType: 'objectId', isList: false, required: true },
      { name: 'name', sourceKey: 'name', kind: 'scalar', scalarType: 'String', bsonType: 'string', isList: false, required: true },
      { name: 'isComplete', sourceKey: 'isComplete', kind: 'scalar', scalarType: 'Boolean', bsonType: 'bool', isList: false, required: false },
      { name: 'priority', sourceKey: 'priority', kind: 'scalar', scalarType: 'Int', bsonType: 'int', isList: false, required: false },
      { name: 'dueDate', sourceKey: 'dueDate', kind: 'scalar', scalarType: 'DateTime', bsonType: 'date', isList: false, required: false },
    ]);
    assert.equal(findCollectionType(generated, 'mongodb-atlas', 'todo', 'User'), undefined);
  });
});

// ---- naming ----

describe('naming', () => {
  const minimal = (title?: string) => ({ ...(title === undefined ? {} : { title }), bsonType: 'object', properties: { _id: { bsonType: 'objectId' } } });

  test('type names: title or collection name, singularised, first letter upper-cased; Rails plurals with fallback', () => {
    const generated = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/db/incident/schema.json': minimal('incident'),
      'data_sources/mongodb-atlas/db/history_incident/schema.json': minimal(),
      'data_sources/mongodb-atlas/db/candidates/schema.json': minimal('candidates'),
      'data_sources/mongodb-atlas/db/mice/schema.json': minimal('Mouse'),
      'data_sources/mongodb-atlas/db/entities/schema.json': minimal(),
      'data_sources/mongodb-atlas/db/taxa/schema.json': minimal('Taxa'),
      'data_sources/mongodb-atlas/db/quickadd/schema.json': minimal('Quickadd'),
      'data_sources/mongodb-atlas/db/equipment/schema.json': minimal('Equipment'),
      'data_sources/mongodb-atlas/db/people/schema.json': minimal(),
    }));
    assert.deepEqual(generated.diagnostics, []);
    const rows = generated.types.map((t) => [t.collection, t.typeName, t.singularField, t.pluralField, t.mutations.insertMany]);
    assert.deepEqual(rows, [
      ['candidates', 'Candidate', 'candidate', 'candidates', 'insertManyCandidates'],
      ['entities', 'Entity', 'entity', 'entities', 'insertManyEntities'],
      ['equipment', 'Equipment', 'equipment', 'equipments', 'insertManyEquipments'],
      ['history_incident', 'History_incident', 'history_incident', 'history_incidents', 'insertManyHistory_incidents'],
      ['incident', 'Incident', 'incident', 'incidents', 'insertManyIncidents'],
      ['mice', 'Mouse', 'mouse', 'mice', 'insertManyMice'],
      ['people', 'Person', 'person', 'people', 'insertManyPeople'],
      ['quickadd', 'Quickadd', 'quickadd', 'quickadds', 'insertManyQuickadds'],
      ['taxa', 'Taxa', 'taxa', 'taxas', 'insertManyTaxas'],
    ]);
    const query = generated.schema.getQueryType()!.getFields();
    assert.equal(String(query.mice.type), '[Mouse]!');
    assert.equal(String(generated.schema.getMutationType()!.getFields().updateManyHistory_incidents.type), 'UpdateManyPayload');
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('use_natural_pluralization: false always appends s', () => {
    const files = {
      'data_sources/mongodb-atlas/db/mice/schema.json': minimal('Mouse'),
      'data_sources/mongodb-atlas/db/people/schema.json': minimal('Person'),
      'data_sources/mongodb-atlas/db/entities/schema.json': minimal('Entity'),
    };
    const generated = generateSchema(graphqlTestApp(files, { naturalPluralization: false }));
    assert.deepEqual(generated.types.map((t) => [t.typeName, t.pluralField, t.mutations.deleteMany]), [
      ['Entity', 'entitys', 'deleteManyEntitys'], ['Mouse', 'mouses', 'deleteManyMouses'], ['Person', 'persons', 'deleteManyPersons'],
    ]);
    const fields = Object.keys(generated.schema.getQueryType()!.getFields()).sort();
    assert.deepEqual(fields, ['entity', 'entitys', 'mouse', 'mouses', 'person', 'persons']);
  });

  test('property keys become GraphQL field names; the document key is kept for the runtime', () => {
    const app = graphqlTestApp({
      'data_sources/mongodb-atlas/db/Team/schema.json': {
        title: 'Team', bsonType: 'object',
        properties: {
          _id: { bsonType: 'objectId' }, 'Assigned to team': { bsonType: 'string' }, editor_notes: { bsonType: 'string' },
          __secret: { bsonType: 'string' }, '42': { bsonType: 'int' }, AssignedToTeam: { bsonType: 'string' },
        },
      },
    });
    const generated = generateSchema(app);
    const team = generated.types[0];
    assert.deepEqual(team.fields.map((f) => [f.name, f.sourceKey]), [['_id', '_id'], ['AssignedToTeam', 'Assigned to team'], ['editor_notes', 'editor_notes']]);
    const file = fileOf(app, 'data_sources/mongodb-atlas/db/Team/schema.json');
    const renamed = diagnostic(generated, 'graphql/renamed-field');
    assert.equal(renamed.severity, 'information');
    assert.deepEqual(renamed.range, file.range(['properties', 'Assigned to team'], 'key'));
    const invalid = generated.diagnostics.filter((d) => d.code === 'graphql/invalid-field-name');
    assert.deepEqual(invalid.map((d) => d.range), [file.range(['properties', '42'], 'key'), file.range(['properties', '__secret'], 'key')]
      .sort((a, b) => a.start.line - b.start.line));
    const duplicate = diagnostic(generated, 'graphql/duplicate-field-name');
    assert.deepEqual(duplicate.range, file.range(['properties', 'AssignedToTeam'], 'key'));
    assert.ok(generated.schema.getType('TeamQueryInput') && 'AssignedToTeam_in' in (generated.schema.getType('TeamQueryInput') as never as { getFields(): object }).getFields());
  });

  test('nested embedded types are named <Parent><Capitalise(singularise(field))>', () => {
    const generated = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/db/taxa/schema.json': {
        title: 'Taxa', bsonType: 'object',
        properties: {
          _id: { bsonType: 'objectId' },
          field_list: {
            bsonType: 'object', required: ['complete_from'],
            properties: {
              label: { bsonType: 'string' },
              complete_from: { bsonType: 'array', items: { bsonType: 'object', properties: { addresses: { bsonType: 'object', properties: { city: { bsonType: 'string' } } } } } },
            },
          },
        },
      },
    }));
    assert.deepEqual(generated.diagnostics, []);
    assertTypes(generated.schema, `
      type Taxa { _id: ObjectId  field_list: TaxaField_list }
      type TaxaField_list { label: String  complete_from: [TaxaField_listComplete_from]! }
      type TaxaField_listComplete_from { addresses: TaxaField_listComplete_fromAddress }
      type TaxaField_listComplete_fromAddress { city: String }
      input TaxaField_listInsertInput { label: String  complete_from: [TaxaField_listComplete_fromInsertInput]! }
      input TaxaField_listUpdateInput { label: String  label_unset: Boolean  complete_from: [TaxaField_listComplete_fromUpdateInput]  complete_from_unset: Boolean }
      input TaxaField_listComplete_fromQueryInput {
        addresses: TaxaField_listComplete_fromAddressQueryInput  addresses_exists: Boolean
        AND: [TaxaField_listComplete_fromQueryInput!]  OR: [TaxaField_listComplete_fromQueryInput!]
      }
      enum TaxaSortByInput { _ID_ASC _ID_DESC }
    `);
    assert.deepEqual(validateSchema(generated.schema), []);
  });
});

// ---- scalars ----

describe('bsonType mapping (graphql.md §3)', () => {
  const path = 'data_sources/mongodb-atlas/db/Everything/schema.json';
  const app = graphqlTestApp({
    [path]: {
      title: 'Everything', bsonType: 'object', required: ['str', 'tags'],
      properties: {
        oid: { bsonType: 'objectId' }, str: { bsonType: 'string' }, flag: { bsonType: 'bool' }, flag2: { bsonType: 'boolean' },
        int: { bsonType: 'int' }, long: { bsonType: 'long' }, double: { bsonType: 'double' }, decimal: { bsonType: 'decimal' },
        date: { bsonType: 'date' }, ts: { bsonType: 'timestamp' }, nullable: { bsonType: ['string', 'null'] },
        tags: { bsonType: 'array', items: { bsonType: 'string' } }, flags: { bsonType: 'array', items: { bsonType: 'bool' } },
        bin: { bsonType: 'binData' }, mixed: { bsonType: 'mixed' }, uuid: { bsonType: 'uuid' }, strange: { bsonType: 'strange' },
        ambiguous: { bsonType: ['string', 'int'] }, noItems: { bsonType: 'array' }, nested: { bsonType: 'array', items: { bsonType: 'array', items: { bsonType: 'int' } } },
        emptyObject: { bsonType: 'object', properties: {} }, binList: { bsonType: 'array', items: { bsonType: 'binData' } },
      },
    },
  });
  const generated = generateSchema(app);
  const file = fileOf(app, path);

  test('each bsonType gets its GraphQL type; required is non-null', () => {
    assertTypes(generated.schema, `
      type Everything {
        oid: ObjectId  str: String!  flag: Boolean  flag2: Boolean  int: Int  long: Long  double: Float  decimal: Float
        date: DateTime  ts: DateTime  nullable: String  tags: [String]!  flags: [Boolean]
      }
      input EverythingInsertInput {
        oid: ObjectId  str: String!  flag: Boolean  flag2: Boolean  int: Int  long: Long  double: Float  decimal: Float
        date: DateTime  ts: DateTime  nullable: String  tags: [String]!  flags: [Boolean]
      }
      input EverythingUpdateInput {
        oid: ObjectId oid_unset: Boolean  str: String str_unset: Boolean  flag: Boolean flag_unset: Boolean  flag2: Boolean flag2_unset: Boolean
        int: Int int_inc: Int int_unset: Boolean  long: Long long_unset: Boolean  double: Float double_inc: Float double_unset: Boolean
        decimal: Float decimal_inc: Float decimal_unset: Boolean  date: DateTime date_unset: Boolean  ts: DateTime ts_unset: Boolean
        nullable: String nullable_unset: Boolean  tags: [String] tags_unset: Boolean  flags: [Boolean] flags_unset: Boolean
      }
      enum EverythingSortByInput {
        OID_ASC OID_DESC STR_ASC STR_DESC INT_ASC INT_DESC LONG_ASC LONG_DESC DOUBLE_ASC DOUBLE_DESC DECIMAL_ASC DECIMAL_DESC
        DATE_ASC DATE_DESC TS_ASC TS_DESC NULLABLE_ASC NULLABLE_DESC
      }
    `);
    const query = (generated.schema.getType('EverythingQueryInput') as unknown as { getFields(): Record<string, { type: unknown }> }).getFields();
    const opsOf = (f: string) => Object.keys(query).filter((k) => k === f || k.startsWith(`${f}_`)).sort();
    assert.deepEqual(opsOf('flag'), ['flag', 'flag_exists', 'flag_ne'], 'Boolean has only _ne and _exists');
    assert.deepEqual(opsOf('long'), ['long', 'long_exists', 'long_gt', 'long_gte', 'long_in', 'long_lt', 'long_lte', 'long_ne', 'long_nin']);
    assert.deepEqual(opsOf('tags'), ['tags', 'tags_exists', 'tags_in', 'tags_nin']);
    assert.equal(String(query.tags.type), '[String]');
    assert.equal(String(query.long_in.type), '[Long]');
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('types without a GraphQL equivalent are omitted with a diagnostic at the property', () => {
    const at = (code: string, severity: string, p: (string | number)[]) => ({ code, severity, range: file.range(p) });
    const actual = generated.diagnostics.map((d) => ({ code: d.code, severity: d.severity, range: d.range, file: d.file }));
    for (const d of actual) assert.equal(d.file, file.path);
    assert.deepEqual(actual.map(({ file: _f, ...rest }) => rest), [
      at('graphql/unsupported-type', 'information', ['properties', 'bin', 'bsonType']),
      at('graphql/unsupported-type', 'information', ['properties', 'mixed', 'bsonType']),
      at('graphql/unsupported-type', 'information', ['properties', 'uuid', 'bsonType']),
      at('graphql/unsupported-type', 'warning', ['properties', 'strange', 'bsonType']),
      at('graphql/unsupported-type', 'warning', ['properties', 'ambiguous', 'bsonType']),
      at('graphql/unsupported-type', 'warning', ['properties', 'noItems', 'bsonType']),
      at('graphql/unsupported-type', 'warning', ['properties', 'nested', 'items']),
      { code: 'graphql/empty-object', severity: 'information', range: file.range(['properties', 'emptyObject'], 'key') },
      at('graphql/unsupported-type', 'information', ['properties', 'binList', 'items', 'bsonType']),
    ]);
    const fields = Object.keys((generated.schema.getType('Everything') as unknown as { getFields(): object }).getFields());
    for (const omitted of ['bin', 'mixed', 'uuid', 'strange', 'ambiguous', 'noItems', 'nested', 'emptyObject', 'binList']) assert.ok(!fields.includes(omitted), omitted);
    assert.equal(generated.types[0].fields.find((f) => f.name === 'decimal')!.bsonType, 'decimal');
  });

  test('Long appears as a scalar only when used', () => {
    assert.ok(generated.schema.getType('Long'));
    assert.equal(generateSchema(graphqlTestApp({ [taskSchemaPath]: taskSchema })).schema.getType('Long'), undefined);
  });
});

// ---- relationships ----

describe('relationships (graphql.md §9)', () => {
  const files = {
    'data_sources/mongodb-atlas/db/User/schema.json': {
      title: 'User', bsonType: 'object', required: ['_id'], properties: { _id: { bsonType: 'objectId' }, name: { bsonType: 'string' } },
    },
    'data_sources/mongodb-atlas/db/Incident/schema.json': {
      title: 'Incident', bsonType: 'object', required: ['editors'],
      properties: {
        _id: { bsonType: 'objectId' }, assignee: { bsonType: 'objectId' }, editors: { bsonType: 'array', items: { bsonType: 'objectId' } },
        owner: { bsonType: 'string' }, reviewer: { bsonType: 'objectId' },
      },
    },
    'data_sources/mongodb-atlas/db/Incident/relationships.json': {
      assignee: { ref: '#/relationship/mongodb-atlas/db/User', source_key: 'assignee', foreign_key: '_id', is_list: false },
      editors: { ref: '#/relationship/mongodb-atlas/db/User', source_key: 'editors', foreign_key: '_id', is_list: true },
      owner: { ref: '#/relationship/mongodb-atlas/db/Owner', source_key: 'owner', foreign_key: '_id', is_list: false },
      reviewer: { ref: '#/relationship/mongodb-atlas/db/Archive', source_key: 'reviewer', foreign_key: '_id', is_list: false },
    },
    'data_sources/mongodb-atlas/db/Archive/rules.json': { roles: [] },
  };
  const app = graphqlTestApp(files);
  const generated = generateSchema(app);
  const relFile = fileOf(app, 'data_sources/mongodb-atlas/db/Incident/relationships.json');

  test('to-one and to-many fields take the foreign type, with RelationInput for writes', () => {
    assertTypes(generated.schema, `
      type Incident { _id: ObjectId  assignee: User  editors: [User]!  owner: String  reviewer: ObjectId }
      input IncidentInsertInput {
        _id: ObjectId  assignee: IncidentAssigneeRelationInput  editors: IncidentEditorsRelationInput!  owner: String  reviewer: ObjectId
      }
      input IncidentUpdateInput {
        _id: ObjectId _id_unset: Boolean  assignee: IncidentAssigneeRelationInput assignee_unset: Boolean
        editors: IncidentEditorsRelationInput editors_unset: Boolean  owner: String owner_unset: Boolean  reviewer: ObjectId reviewer_unset: Boolean
      }
      input IncidentAssigneeRelationInput { link: ObjectId  create: UserInsertInput }
      input IncidentEditorsRelationInput { link: [ObjectId]  create: [UserInsertInput] }
      enum IncidentSortByInput { _ID_ASC _ID_DESC ASSIGNEE_ASC ASSIGNEE_DESC OWNER_ASC OWNER_DESC REVIEWER_ASC REVIEWER_DESC }
    `);
    const query = (generated.schema.getType('IncidentQueryInput') as unknown as { getFields(): Record<string, { type: unknown }> }).getFields();
    const relOps = Object.fromEntries(Object.entries(query).filter(([k]) => k.startsWith('assignee') || k.startsWith('editors')).map(([k, f]) => [k, String(f.type)]));
    assert.deepEqual(relOps, {
      assignee: 'UserQueryInput', assignee_exists: 'Boolean',
      editors: '[UserQueryInput]', editors_in: '[UserQueryInput]', editors_nin: '[UserQueryInput]', editors_exists: 'Boolean',
    });
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('relationship metadata for the runtime', () => {
    const incident = generated.types.find((t) => t.typeName === 'Incident')!;
    const editors = incident.fields.find((f) => f.name === 'editors')!;
    assert.equal(editors.kind, 'relationship');
    assert.equal(editors.scalarType, 'ObjectId');
    assert.equal(editors.isList, true);
    assert.deepEqual(editors.relationship, {
      target: { dataSource: 'mongodb-atlas', database: 'db', collection: 'User' }, targetTypeName: 'User',
      sourceKey: 'editors', foreignKey: '_id', isList: true, relationInputName: 'IncidentEditorsRelationInput',
    });
    assert.equal(incident.fields.find((f) => f.name === 'assignee')!.relationship!.isList, false);
    assert.equal(incident.fields.find((f) => f.name === 'owner')!.kind, 'scalar');
  });

  test('a ref to a missing collection or one without schema is reported at the ref; the field keeps its scalar type', () => {
    const targets = generated.diagnostics.filter((d) => d.code === 'graphql/unknown-relationship-target');
    assert.deepEqual(targets.map((d) => [d.file, d.range, d.severity]), [
      [relFile.path, relFile.range(['owner', 'ref']), 'error'],
      [relFile.path, relFile.range(['reviewer', 'ref']), 'error'],
    ]);
    assert.match(targets[0].message, /no collection mongodb-atlas\/db\/Owner/);
    assert.match(targets[1].message, /mongodb-atlas\/db\/Archive has no schema/);
    assert.equal(generated.schema.getType('IncidentOwnerRelationInput'), undefined);
    assert.deepEqual(codes(generated), ['graphql/unknown-relationship-target', 'graphql/unknown-relationship-target']);
  });

  test('malformed relationships are reported and skipped', () => {
    const bad = generateSchema(graphqlTestApp({
      ...files,
      'data_sources/mongodb-atlas/db/Incident/relationships.json': {
        assignee: { ref: 'mongodb-atlas/db/User', foreign_key: '_id' },
        editors: { ref: '#/relationship/mongodb-atlas/db/User', foreign_key: 'missing', is_list: false },
        ghost: { ref: '#/relationship/mongodb-atlas/db/User', foreign_key: '_id' },
        owner: { ref: '#/relationship/mongodb-atlas/db/User' },
      },
    }));
    assert.deepEqual(codes(bad), [
      'graphql/invalid-relationship', 'graphql/invalid-relationship-ref', 'graphql/relationship-list-mismatch',
      'graphql/unknown-relationship-field', 'graphql/unknown-relationship-foreign-key',
    ]);
    const incident = bad.schema.getType('Incident') as unknown as { getFields(): Record<string, { type: unknown }> };
    assert.equal(String(incident.getFields().assignee.type), 'ObjectId');
    assert.equal(String(incident.getFields().editors.type), 'User!', 'is_list decides the output; the mismatch is a warning');
    assert.deepEqual(validateSchema(bad.schema), []);
  });

  test('relationships may be cyclic and self-referencing', () => {
    const cyclic = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/db/Node/schema.json': { title: 'Node', properties: { _id: { bsonType: 'objectId' }, parent: { bsonType: 'objectId' }, owner: { bsonType: 'string' } } },
      'data_sources/mongodb-atlas/db/Node/relationships.json': {
        parent: { ref: '#/relationship/mongodb-atlas/db/Node', foreign_key: '_id', is_list: false },
        owner: { ref: '#/relationship/mongodb-atlas/db/Person', foreign_key: 'name', is_list: false },
      },
      'data_sources/mongodb-atlas/db/Person/schema.json': { title: 'Person', properties: { name: { bsonType: 'string' }, nodes: { bsonType: 'array', items: { bsonType: 'objectId' } } } },
      'data_sources/mongodb-atlas/db/Person/relationships.json': { nodes: { ref: '#/relationship/mongodb-atlas/db/Node', foreign_key: '_id', is_list: true } },
    }));
    assert.deepEqual(cyclic.diagnostics, []);
    assertTypes(cyclic.schema, `
      type Node { _id: ObjectId  parent: Node  owner: Person }
      type Person { name: String  nodes: [Node] }
      input NodeOwnerRelationInput { link: String  create: PersonInsertInput }
    `);
    assert.deepEqual(validateSchema(cyclic.schema), []);
  });
});

// ---- custom resolvers ----

describe('custom resolvers (graphql.md §10)', () => {
  const resolver = (name: string, config: Record<string, unknown>) => ({ [`graphql/custom_resolvers/${name}.json`]: { function_name: name, ...config } });

  test('every input and payload format', () => {
    const generated = generateSchema(graphqlTestApp({
      [taskSchemaPath]: taskSchema,
      ...resolver('scalarIn', { on_type: 'Query', field_name: 'echo', input_type_format: 'scalar', input_type: 'string', payload_type_format: 'scalar', payload_type: 'number' }),
      ...resolver('listIn', { on_type: 'Query', field_name: 'sum', input_type_format: 'scalar-list', input_type: 'double', payload_type_format: 'scalar-list', payload_type: 'long' }),
      ...resolver('generatedIn', { on_type: 'Mutation', field_name: 'addTask', input_type_format: 'generated', input_type: 'TaskInsertInput', payload_type_format: 'generated-list', payload_type: 'Task' }),
      ...resolver('generatedList', { on_type: 'Mutation', field_name: 'addTasks', input_type_format: 'generated-list', input_type: 'TaskInsertInput', payload_type_format: 'scalar', payload_type: 'int' }),
      ...resolver('risks', {
        on_type: 'Query', field_name: 'risks', input_type_format: '',
        payload_type_format: 'custom',
        payload_type: {
          title: 'RisksPayload', bsonType: 'array',
          items: {
            bsonType: 'object', required: ['name'],
            properties: {
              name: { bsonType: 'string' }, amount: { bsonType: 'decimal' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
              precedents: { bsonType: 'array', items: { bsonType: 'object', properties: { year: { bsonType: 'int' } } } },
            },
          },
        },
      }),
      ...resolver('adminData', {
        on_type: 'Query', field_name: 'adminData', input_type_format: 'custom',
        input_type: { title: 'AdminFilters', type: 'object', properties: { user: { bsonType: 'objectId' }, range: { bsonType: 'object', required: ['from'], properties: { from: { bsonType: 'date' } } } } },
        payload_type_format: 'custom', payload_type: { title: 'UserAdminData', bsonType: 'object', properties: { total: { bsonType: 'int' } } },
      }),
      ...resolver('translations', {
        on_type: 'Task', field_name: 'translations', input_type_format: 'scalar', input_type: 'string',
        payload_type_format: 'custom', payload_type: { bsonType: 'array', items: { title: 'ReportTranslations', bsonType: 'object', properties: { text: { bsonType: 'string' } } } },
      }),
      ...resolver('silent', { on_type: 'Mutation', field_name: 'silent', input_type_format: 'scalar', input_type: 'objectId', payload_type_format: '' }),
    }));
    assert.deepEqual(generated.diagnostics, []);
    assertTypes(generated.schema, `
      type RisksPayloadItem { name: String!  amount: Float  tags: [String]  precedents: [RisksPayloadPrecedent] }
      type RisksPayloadPrecedent { year: Int }
      input AdminFilter { user: ObjectId  range: AdminFilterRange }
      input AdminFilterRange { from: DateTime! }
      type UserAdminDatum { total: Int }
      type ReportTranslation { text: String }
      type DefaultPayload { status: String! }
    `);
    const query = generated.schema.getQueryType()!.getFields();
    const mutation = generated.schema.getMutationType()!.getFields();
    const sig = (f: { args: readonly { name: string; type: unknown }[]; type: unknown }) => `(${f.args.map((a) => `${a.name}: ${String(a.type)}`).join(', ')}): ${String(f.type)}`;
    assert.equal(sig(query.echo), '(input: String): Float');
    assert.equal(sig(query.sum), '(input: [Float]): [Long]');
    assert.equal(sig(query.risks), '(): [RisksPayloadItem]');
    assert.equal(sig(query.adminData), '(input: AdminFilter): UserAdminDatum');
    assert.equal(sig(mutation.addTask), '(input: TaskInsertInput): [Task]');
    assert.equal(sig(mutation.addTasks), '(input: [TaskInsertInput]): Int');
    assert.equal(sig(mutation.silent), '(input: ObjectId): DefaultPayload');
    const taskFields = (generated.schema.getType('Task') as unknown as { getFields(): Record<string, { args: { name: string; type: unknown }[]; type: unknown }> }).getFields();
    assert.equal(sig(taskFields.translations), '(input: String): [ReportTranslation]');
    const byField = new Map(generated.resolvers.map((r) => [r.fieldName, r]));
    assert.deepEqual(byField.get('sum')!.input, { kind: 'scalar', typeName: 'Float', isList: true });
    assert.deepEqual(byField.get('sum')!.payload, { kind: 'scalar', typeName: 'Long', isList: true });
    assert.deepEqual(byField.get('addTask')!.payload, { kind: 'generated', typeName: 'Task', isList: true });
    assert.deepEqual(byField.get('risks')!.payload, { kind: 'custom', typeName: 'RisksPayloadItem', isList: true });
    assert.equal(byField.get('risks')!.hasInput, false);
    assert.deepEqual(byField.get('silent')!.payload, { kind: 'default', typeName: 'DefaultPayload', isList: false });
    assert.ok(!generated.generatedTypeNames.output.includes('RisksPayloadItem'));
    assert.ok(generated.generatedTypeNames.input.includes('TaskInsertInput'));
    assert.ok(generated.generatedTypeNames.output.includes('Task'));
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('a resolver replaces a generated field with the same name', () => {
    const generated = generateSchema(graphqlTestApp({
      [taskSchemaPath]: taskSchema,
      ...resolver('taskName', { on_type: 'Task', field_name: 'name', input_type_format: '', payload_type_format: 'scalar', payload_type: 'string' }),
      ...resolver('tasks', { on_type: 'Query', field_name: 'tasks', input_type_format: 'scalar', input_type: 'string', payload_type_format: 'generated-list', payload_type: 'Task' }),
    }));
    const task = (generated.schema.getType('Task') as unknown as { getFields(): Record<string, { type: unknown }> }).getFields();
    assert.equal(String(task.name.type), 'String', 'the resolver payload replaces name: String!');
    assert.deepEqual(Object.keys(task), ['_id', 'name', 'isComplete', 'priority', 'dueDate'], 'the field keeps its place');
    const tasks = generated.schema.getQueryType()!.getFields().tasks;
    assert.deepEqual(tasks.args.map((a) => `${a.name}: ${String(a.type)}`), ['input: String']);
    assert.equal(String(tasks.type), '[Task]');
    assert.deepEqual(generated.resolvers.map((r) => r.overridesGeneratedField), [true, true]);
    assert.deepEqual(codes(generated), []);
  });

  test('invalid resolvers are reported at the responsible key and left out', () => {
    const app = graphqlTestApp({
      [taskSchemaPath]: taskSchema,
      ...resolver('a_parent', { on_type: 'Nope', field_name: 'x', input_type_format: '' }),
      ...resolver('b_fieldName', { on_type: 'Query', field_name: 'bad name', input_type_format: '' }),
      ...resolver('c_scalar', { on_type: 'Query', field_name: 'c', input_type_format: 'scalar', input_type: 'binData' }),
      ...resolver('d_generated', { on_type: 'Query', field_name: 'd', input_type_format: 'generated', input_type: 'Task' }),
      ...resolver('e_generatedPayload', { on_type: 'Query', field_name: 'e', input_type_format: '', payload_type_format: 'generated', payload_type: 'TaskInsertInput' }),
      ...resolver('f_format', { on_type: 'Query', field_name: 'f', input_type_format: 'json', input_type: 'string' }),
      ...resolver('g_noTitle', { on_type: 'Query', field_name: 'g', input_type_format: 'custom', input_type: { bsonType: 'object', properties: { a: { bsonType: 'string' } } } }),
      ...resolver('h_arrayInput', { on_type: 'Query', field_name: 'h', input_type_format: 'custom', input_type: { title: 'H', bsonType: 'array', items: { bsonType: 'object', properties: { a: { bsonType: 'string' } } } } }),
      ...resolver('i_noProperties', { on_type: 'Query', field_name: 'i', input_type_format: '', payload_type_format: 'custom', payload_type: { title: 'Empty', bsonType: 'object', properties: {} } }),
      ...resolver('j_missingInput', { on_type: 'Query', field_name: 'j', input_type_format: 'scalar' }),
      ...resolver('k_collidesWithGenerated', { on_type: 'Query', field_name: 'k', input_type_format: '', payload_type_format: 'custom', payload_type: { title: 'TaskQueryInput', properties: { a: { bsonType: 'string' } } } }),
      ...resolver('l_first', { on_type: 'Query', field_name: 'same', input_type_format: '', payload_type_format: 'custom', payload_type: { title: 'Shared', properties: { a: { bsonType: 'string' } } } }),
      ...resolver('m_duplicateField', { on_type: 'Query', field_name: 'same', input_type_format: '' }),
      ...resolver('n_duplicateTitle', { on_type: 'Query', field_name: 'n', input_type_format: '', payload_type_format: 'custom', payload_type: { title: 'Shared', properties: { b: { bsonType: 'int' } } } }),
      ...resolver('o_inputPayloadSameTitle', {
        on_type: 'Query', field_name: 'o', input_type_format: 'custom', input_type: { title: 'Both', properties: { a: { bsonType: 'string' } } },
        payload_type_format: 'custom', payload_type: { title: 'Both', properties: { a: { bsonType: 'string' } } },
      }),
    });
    const generated = generateSchema(app);
    const rel = (d: { file: string }) => [...app.files.values()].find((f) => f.path === d.file)!.relPath.replace('graphql/custom_resolvers/', '');
    const actual = generated.diagnostics.map((d) => [rel(d), d.code, d.severity]);
    assert.deepEqual(actual, [
      ['a_parent.json', 'graphql/unknown-resolver-parent', 'warning'],
      ['b_fieldName.json', 'graphql/invalid-resolver-field-name', 'error'],
      ['c_scalar.json', 'graphql/unknown-resolver-scalar', 'error'],
      ['d_generated.json', 'graphql/unknown-generated-type', 'warning'],
      ['e_generatedPayload.json', 'graphql/unknown-generated-type', 'warning'],
      ['f_format.json', 'graphql/invalid-type-format', 'error'],
      ['g_noTitle.json', 'graphql/invalid-custom-type', 'error'],
      ['h_arrayInput.json', 'graphql/invalid-custom-type', 'error'],
      ['i_noProperties.json', 'graphql/invalid-custom-type', 'error'],
      ['j_missingInput.json', 'graphql/missing-resolver-type', 'error'],
      ['k_collidesWithGenerated.json', 'graphql/duplicate-type-name', 'error'],
      ['m_duplicateField.json', 'graphql/duplicate-resolver-field', 'error'],
      ['n_duplicateTitle.json', 'graphql/duplicate-type-name', 'error'],
      ['o_inputPayloadSameTitle.json', 'graphql/duplicate-type-name', 'error'],
    ]);
    const file = (name: string) => fileOf(app, `graphql/custom_resolvers/${name}.json`);
    const rangeOf = (name: string) => generated.diagnostics.find((d) => d.file === file(name).path)!.range;
    assert.deepEqual(rangeOf('a_parent'), file('a_parent').range(['on_type']));
    assert.deepEqual(rangeOf('c_scalar'), file('c_scalar').range(['input_type']));
    assert.deepEqual(rangeOf('f_format'), file('f_format').range(['input_type_format']));
    assert.deepEqual(rangeOf('k_collidesWithGenerated'), file('k_collidesWithGenerated').range(['payload_type', 'title']));
    assert.deepEqual(rangeOf('m_duplicateField'), file('m_duplicateField').range(['field_name']));
    assert.deepEqual(generated.resolvers.map((r) => r.fieldName), ['same']);
    assert.deepEqual(Object.keys(generated.schema.getQueryType()!.getFields()), ['task', 'tasks', 'same']);
    assert.equal(generated.schema.getType('Both'), undefined, 'a rejected resolver leaves no types behind');
    assert.ok(isInputObjectType(generated.schema.getType('TaskQueryInput')), 'the generated input keeps its name');
    assert.deepEqual(validateSchema(generated.schema), []);
  });
});

// ---- collisions and determinism ----

describe('name collisions', () => {
  test('two collections with one type name: the first in path order wins, the other is reported', () => {
    const app = graphqlTestApp({
      'data_sources/mongodb-atlas/todo/tasks/schema.json': { bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, a: { bsonType: 'string' } } },
      'data_sources/mongodb-atlas/todo/Task/schema.json': { title: 'Task', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, b: { bsonType: 'string' } } },
    });
    const generated = generateSchema(app);
    assert.deepEqual(generated.types.map((t) => t.collection), ['Task']);
    const d = diagnostic(generated, 'graphql/duplicate-type-name');
    assert.equal(d.file, appPath('data_sources/mongodb-atlas/todo/tasks/schema.json'));
    assert.equal(d.severity, 'warning', 'the platform stores such schemas, so an export can hold them');
    assert.match(d.message, /"Task" is already used by collection mongodb-atlas\/todo\/Task/);
    const file = fileOf(app, 'data_sources/mongodb-atlas/todo/tasks/schema.json');
    assert.deepEqual(d.range, file.range(['title']), 'no title: the schema object itself');
    assert.ok('b' in (generated.schema.getType('Task') as unknown as { getFields(): object }).getFields());
  });

  test('an embedded type name taken by a collection type drops the embedded field', () => {
    const generated = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/todo/Task/schema.json': {
        title: 'Task', properties: { _id: { bsonType: 'objectId' }, checklist: { bsonType: 'object', properties: { done: { bsonType: 'bool' } } } },
      },
      'data_sources/mongodb-atlas/todo/TaskChecklist/schema.json': { title: 'TaskChecklist', properties: { _id: { bsonType: 'objectId' } } },
    }));
    const d = diagnostic(generated, 'graphql/duplicate-type-name');
    assert.equal(d.file, appPath('data_sources/mongodb-atlas/todo/Task/schema.json'));
    assert.deepEqual(Object.keys((generated.schema.getType('Task') as unknown as { getFields(): object }).getFields()), ['_id']);
    assert.deepEqual(Object.keys((generated.schema.getType('TaskChecklist') as unknown as { getFields(): object }).getFields()), ['_id']);
    assert.deepEqual(validateSchema(generated.schema), []);
  });

  test('a collection cannot take a built-in or shared type name', () => {
    const generated = generateSchema(graphqlTestApp({
      'data_sources/mongodb-atlas/db/q/schema.json': { title: 'Query', properties: { a: { bsonType: 'string' } } },
      'data_sources/mongodb-atlas/db/d/schema.json': { title: 'DateTime', properties: { a: { bsonType: 'string' } } },
      'data_sources/mongodb-atlas/db/p/schema.json': { title: 'DeleteManyPayload', properties: { a: { bsonType: 'string' } } },
    }));
    assert.deepEqual(codes(generated), ['graphql/duplicate-type-name', 'graphql/duplicate-type-name', 'graphql/duplicate-type-name', 'graphql/empty-api']);
    assert.deepEqual(generated.types, []);
  });

  test('the same generation whatever the order of data sources, collections and resolvers', () => {
    const files: Record<string, unknown> = {
      'data_sources/mongodb-atlas/todo/tasks/schema.json': { properties: { _id: { bsonType: 'objectId' } } },
      'data_sources/mongodb-atlas/todo/Task/schema.json': { title: 'Task', properties: { _id: { bsonType: 'objectId' }, b: { bsonType: 'string' } } },
      'data_sources/other/todo/Task/schema.json': { title: 'Task', properties: { _id: { bsonType: 'objectId' } } },
      'data_sources/mongodb-atlas/todo/User/schema.json': { title: 'User', properties: { _id: { bsonType: 'objectId' } } },
      ...taskResolvers,
    };
    const forward = generateSchema(graphqlTestApp(files));
    const reversed = generateSchema(graphqlTestApp(Object.fromEntries(Object.entries(files).reverse())));
    assert.equal(reversed.sdl, forward.sdl);
    assert.deepEqual(reversed.diagnostics, forward.diagnostics);
    assert.deepEqual(forward.types.map((t) => `${t.dataSource}/${t.collection}`), ['mongodb-atlas/Task', 'mongodb-atlas/User']);
    assert.equal(forward.diagnostics.filter((d) => d.code === 'graphql/duplicate-type-name').length, 2);
  });
});

// ---- whole app ----

describe('a multi-collection app with every feature', () => {
  const app = graphqlTestApp({
    [taskSchemaPath]: {
      ...taskSchema,
      properties: {
        ...taskSchema.properties,
        assignee: { bsonType: 'objectId' }, watchers: { bsonType: 'array', items: { bsonType: 'objectId' } }, estimate: { bsonType: 'long' },
        cost: { bsonType: 'decimal' }, 'Assigned to team': { bsonType: 'string' }, tags: { bsonType: 'array', items: { bsonType: 'string' } },
        checklist: { bsonType: 'array', items: { bsonType: 'object', required: ['text'], properties: { text: { bsonType: 'string' }, done: { bsonType: 'bool' }, at: { bsonType: 'timestamp' } } } },
        location: { bsonType: 'object', properties: { city: { bsonType: 'string' }, geo: { bsonType: 'object', properties: { lat: { bsonType: 'double' }, lng: { bsonType: 'double' } } } } },
        attachment: { bsonType: 'binData' },
      },
    },
    'data_sources/mongodb-atlas/todo/Task/relationships.json': {
      assignee: { ref: '#/relationship/mongodb-atlas/todo/User', source_key: 'assignee', foreign_key: '_id', is_list: false },
      watchers: { ref: '#/relationship/mongodb-atlas/todo/User', source_key: 'watchers', foreign_key: '_id', is_list: true },
    },
    'data_sources/mongodb-atlas/todo/User/schema.json': {
      title: 'User', required: ['_id', 'email'],
      properties: { _id: { bsonType: 'objectId' }, email: { bsonType: 'string' }, tasks: { bsonType: 'array', items: { bsonType: 'objectId' } } },
    },
    'data_sources/mongodb-atlas/todo/User/relationships.json': { tasks: { ref: '#/relationship/mongodb-atlas/todo/Task', foreign_key: '_id', is_list: true } },
    'data_sources/mongodb-atlas/zoo/mice/schema.json': { properties: { _id: { bsonType: 'objectId' }, age: { bsonType: 'int' } } },
    'data_sources/mongodb-atlas/zoo/equipment/schema.json': { properties: { _id: { bsonType: 'objectId' }, flags: { bsonType: 'array', items: { bsonType: 'bool' } } } },
    'data_sources/lake/zoo/visits/schema.json': { properties: { _id: { bsonType: 'objectId' } } },
    ...taskResolvers,
  }, { dataSourceTypes: { lake: 'datalake' } });
  const generated = generateSchema(app);

  test('passes graphql-js schema validation and answers introspection', () => {
    assert.deepEqual(validateSchema(generated.schema), []);
    const introspection = graphqlSync({ schema: generated.schema, source: getIntrospectionQuery() });
    assert.equal(introspection.errors, undefined);
    assert.deepEqual(codes(generated), ['graphql/renamed-field', 'graphql/unsupported-type']);
  });

  test('the printed SDL rebuilds into the same schema', () => {
    const rebuilt = buildSchema(generated.sdl);
    assert.deepEqual(validateSchema(rebuilt), []);
    assertSchemaEquals(generated.schema, generated.sdl);
    assert.equal(generated.sdl.indexOf('scalar ObjectId'), 0, 'scalars first');
    assert.ok(generated.sdl.indexOf('type Query') < generated.sdl.indexOf('type Mutation'));
    assert.ok(generated.sdl.trimEnd().endsWith('}') && generated.sdl.lastIndexOf('type Mutation') > generated.sdl.lastIndexOf('type TaskHistoryEntry'), 'Query and Mutation last');
  });

  test('only linked-cluster data sources get types', () => {
    assert.deepEqual(generated.types.map((t) => t.typeName), ['Task', 'User', 'Equipment', 'Mouse']);
    assert.equal(generated.schema.getType('Visit'), undefined);
  });

  test('hover SDL for a type and for a resolver field', () => {
    assert.equal(sdlForType(generated, 'TaskChecklist'), printType(generated.schema.getType('TaskChecklist')!));
    assert.equal(sdlForType(generated, 'Nope'), undefined);
    const history = app.graphql.customResolvers.find((r) => r.fieldName === 'history')!;
    assert.equal(sdlForResolverField(generated, history), 'extend type Task {\n  history: [TaskHistoryEntry]\n}\n\ntype TaskHistoryEntry {\n  at: String!\n  note: String!\n}');
    const rename = generated.resolvers.find((r) => r.fieldName === 'renameTask')!;
    assert.equal(sdlForResolverField(generated, rename),
      'extend type Mutation {\n  renameTask(input: RenameTaskInput): Task\n}\n\ninput RenameTaskInput {\n  taskId: ObjectId!\n  name: String!\n}');
    const archive = generated.resolvers.find((r) => r.fieldName === 'archiveCompletedTasks')!;
    assert.equal(sdlForResolverField(generated, archive), 'extend type Mutation {\n  archiveCompletedTasks: DefaultPayload\n}');
  });
});

describe('empty apps', () => {
  test('no collection with a schema: no Mutation type and an information diagnostic', () => {
    const app = graphqlTestApp({
      'data_sources/mongodb-atlas/db/a/schema.json': {},
      'data_sources/mongodb-atlas/db/b/schema.json': '{"title": ',
      'data_sources/mongodb-atlas/db/c/schema.json': [],
    });
    const generated = generateSchema(app);
    assert.deepEqual(codes(generated), ['graphql/empty-api', 'graphql/empty-type', 'graphql/invalid-schema']);
    assert.equal(generated.schema.getMutationType(), undefined);
    assert.equal(diagnostic(generated, 'graphql/empty-api').file, app.rootFile.path);
  });
});

describe('with the loader', () => {
  test('an app loaded from files generates its schema and reports at the loaded files', async () => {
    const files = baseApp();
    delete files['data_sources/mongodb-atlas/todo/User/schema.json'];
    const app = await loadApp(appFs(files), APP_ROOT);
    const generated = generateSchema(app);
    assert.deepEqual(generated.types.map((t) => t.typeName), ['Task']);
    assert.deepEqual(generated.resolvers.map((r) => `${r.parent}.${r.fieldName}`), ['Mutation.renameTask']);
    const target = diagnostic(generated, 'graphql/unknown-relationship-target');
    assert.equal(target.file, app.dataSources[0].collections.find((c) => c.collection === 'Task')!.relationships!.path);
    assert.equal(String((generated.schema.getType('Task') as unknown as { getFields(): Record<string, { type: unknown }> }).getFields().assignee.type), 'ObjectId');
    assert.deepEqual(validateSchema(generated.schema), []);
  });
});

describe('GenerationCache', () => {
  test('regenerating after a resolver change reuses the collection phase and equals a fresh generation', async () => {
    const { GenerationCache } = await import('../../core/graphql/generate');
    const { ParseCache } = await import('../../core/load');
    const files = baseApp();
    const parseCache = new ParseCache();
    const cache = new GenerationCache();
    const first = generateSchema(await loadApp(appFs(files), APP_ROOT, { cache: parseCache }), cache);
    const snapshot = cache.collections;
    assert.ok(snapshot);
    assert.ok(String(first.schema.getMutationType()!.getFields().renameTask.type) === 'Task');
    files['graphql/custom_resolvers/task_extra.json'] = { on_type: 'Task', field_name: 'extra', function_name: 'renameTask', input_type_format: '', payload_type_format: 'scalar', payload_type: 'string' };
    files['graphql/custom_resolvers/query_broken.json'] = { on_type: 'Nope', field_name: 'x', function_name: 'renameTask' };
    const app = await loadApp(appFs(files), APP_ROOT, { cache: parseCache });
    const incremental = generateSchema(app, cache);
    assert.equal(cache.collections, snapshot, 'the collection phase was reused');
    const fresh = generateSchema(app);
    assert.equal(incremental.sdl, fresh.sdl);
    assert.deepEqual(incremental.diagnostics, fresh.diagnostics);
    assert.ok((incremental.schema.getType('Task') as unknown as { getFields(): Record<string, unknown> }).getFields().extra);
    const again = generateSchema(await loadApp(appFs(baseApp()), APP_ROOT, { cache: parseCache }), cache);
    assert.equal((again.schema.getType('Task') as unknown as { getFields(): Record<string, unknown> }).getFields().extra, undefined, 'a computed field of an earlier generation does not leak into the snapshot');
  });
});
