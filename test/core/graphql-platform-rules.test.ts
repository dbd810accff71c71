// The generated schema is the platform's (issue 11 §3): one test per rule, each on a small app of our own.
// Compared against a schema the platform generated for a public app (responsible-ai-collaborative/aiid at
// 68ab9dde, site/gatsby-site/server/remoteTypeDefs.ts next to site/realm/): its `subscriptions` collection,
// titled "subscription", is the ordinary type `Subscription` with `subscription`/`subscriptions` root fields
// and the full mutation set.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  buildClientSchema, buildSchema, introspectionFromSchema, isEnumType, isInputObjectType, isObjectType,
  type GraphQLEnumType, type GraphQLInputObjectType, type GraphQLObjectType, type GraphQLSchema,
} from 'graphql';
import { generateSchema, printGeneratedSchema } from '../../core/graphql';
import { loadApp } from '../../core/load';
import { APP_ROOT, appFs, baseApp } from '../helpers/app';

const ds = 'data_sources/mongodb-atlas/todo';

async function generate(extra: Record<string, unknown>) {
  const files = baseApp();
  delete files['graphql/custom_resolvers/mutation_renameTask.json'];
  return generateSchema(await loadApp(appFs({ ...files, ...extra }), APP_ROOT));
}

function collection(folder: string, schema: Record<string, unknown>, rulesCollection = folder): Record<string, unknown> {
  return {
    [`${ds}/${folder}/schema.json`]: schema,
    [`${ds}/${folder}/rules.json`]: { database: 'todo', collection: rulesCollection, roles: [], filters: [] },
  };
}

const fieldsOf = (schema: GraphQLSchema, name: string) => {
  const type = schema.getType(name);
  assert.ok(isObjectType(type) || isInputObjectType(type), `${name} exists`);
  return Object.fromEntries(Object.values((type as GraphQLObjectType | GraphQLInputObjectType).getFields()).map((f) => [f.name, String(f.type)]));
};

const subscriptions = collection('subscriptions', { bsonType: 'object', required: ['plan'], properties: { _id: { bsonType: 'objectId' }, plan: { bsonType: 'string' } } });
const statusSchema = {
  title: 'Ticket', bsonType: 'object', required: ['_id', 'status'],
  properties: { _id: { bsonType: 'objectId' }, status: { bsonType: 'string', enum: ['open', 'in progress', 'done'] }, tags: { bsonType: 'array', items: { bsonType: 'string', enum: ['a', 'b'] } } },
};

describe('generated schema rules of the platform', () => {
  test('Subscription is an ordinary type name: root fields, full CRUD, and a schema block so no tool takes it for the subscription root', async () => {
    const generated = await generate(subscriptions);
    assert.deepEqual(generated.diagnostics.filter((d) => d.severity !== 'information'), []);
    const info = generated.types.find((t) => t.collection === 'subscriptions')!;
    assert.equal(info.typeName, 'Subscription');
    const query = fieldsOf(generated.schema, 'Query');
    assert.equal(query.subscription, 'Subscription');
    assert.equal(query.subscriptions, '[Subscription]!');
    const mutation = fieldsOf(generated.schema, 'Mutation');
    for (const name of ['insertOneSubscription', 'insertManySubscriptions', 'updateOneSubscription', 'updateManySubscriptions', 'upsertOneSubscription', 'replaceOneSubscription', 'deleteOneSubscription', 'deleteManySubscriptions']) {
      assert.ok(mutation[name], `Mutation.${name}`);
    }
    assert.ok(generated.sdl.startsWith('schema {\n  query: Query\n  mutation: Mutation\n}\n\n'), generated.sdl.slice(0, 80));
    const built = buildSchema(generated.sdl);
    assert.equal(built.getSubscriptionType(), undefined, 'buildSchema(asl schema) has no subscription root');
    assert.ok(isObjectType(built.getType('Subscription')));
  });

  test('without a Subscription type the SDL has no schema block (conventional root names)', async () => {
    const generated = await generate({});
    assert.doesNotMatch(generated.sdl, /^schema \{/m);
  });

  test('a string property with enum is enum <Type><Field> with upper-cased values, in the document type and every input', async () => {
    const generated = await generate(collection('tickets', statusSchema));
    const schema = generated.schema;
    const status = schema.getType('TicketStatus') as GraphQLEnumType;
    assert.ok(isEnumType(status));
    assert.deepEqual(status.getValues().map((v) => [v.name, v.value]), [['OPEN', 'open'], ['IN_PROGRESS', 'in progress'], ['DONE', 'done']]);
    assert.ok(isEnumType(schema.getType('TicketTags')), 'an array of enum strings too');
    assert.equal(fieldsOf(schema, 'Ticket').status, 'TicketStatus!');
    assert.equal(fieldsOf(schema, 'Ticket').tags, '[TicketTags]');
    assert.equal(fieldsOf(schema, 'TicketInsertInput').status, 'TicketStatus!');
    const update = fieldsOf(schema, 'TicketUpdateInput');
    assert.equal(update.status, 'TicketStatus');
    assert.equal(update.status_unset, 'Boolean');
    assert.equal(update.status_inc, undefined);
    const query = fieldsOf(schema, 'TicketQueryInput');
    for (const op of ['', '_ne', '_gt', '_gte', '_lt', '_lte']) assert.equal(query[`status${op}`], 'TicketStatus', `status${op}`);
    assert.equal(query.status_in, '[TicketStatus]');
    assert.equal(query.status_nin, '[TicketStatus]');
    assert.equal(query.status_exists, 'Boolean');
    const sort = (schema.getType('TicketSortByInput') as GraphQLEnumType).getValues().map((v) => v.name);
    assert.ok(sort.includes('STATUS_ASC') && sort.includes('STATUS_DESC'), sort.join(' '));
    const field = generated.types[generated.types.length - 1]!.fields.find((f) => f.name === 'status')!;
    assert.deepEqual(field.enum, { typeName: 'TicketStatus', values: [{ name: 'OPEN', stored: 'open' }, { name: 'IN_PROGRESS', stored: 'in progress' }, { name: 'DONE', stored: 'done' }] });
  });

  test('enum values that become the same name leave the property a String, with a warning', async () => {
    const generated = await generate(collection('tickets', { title: 'Ticket', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, status: { bsonType: 'string', enum: ['in-progress', 'in progress'] } } }));
    assert.equal(fieldsOf(generated.schema, 'Ticket').status, 'String');
    assert.equal(generated.diagnostics.find((d) => d.code === 'graphql/enum-value-clash')?.severity, 'warning');
  });

  test('a required objectId _id is ObjectId! on the document type but nullable in the insert input', async () => {
    const generated = await generate(collection('tickets', statusSchema));
    assert.equal(fieldsOf(generated.schema, 'Ticket')._id, 'ObjectId!');
    assert.equal(fieldsOf(generated.schema, 'TicketInsertInput')._id, 'ObjectId');
    const stringId = await generate(collection('tickets', { title: 'Ticket', bsonType: 'object', required: ['_id'], properties: { _id: { bsonType: 'string' } } }));
    assert.equal(fieldsOf(stringId.schema, 'TicketInsertInput')._id, 'String!', 'only an objectId is filled in by the server');
  });

  test('type name: the schema title, else the rules.json collection; invalid characters stripped, singularised, capitalised', async () => {
    const props = { properties: { _id: { bsonType: 'objectId' } }, bsonType: 'object' };
    const generated = await generate({
      ...collection('FolderA', props, 'line-items'),
      ...collection('FolderB', { ...props, title: 'order entries' }),
      ...collection('FolderC', props, '2024_reports'),
    });
    const names = Object.fromEntries(generated.types.map((t) => [t.collection, t.typeName]));
    assert.deepEqual(names, { 'line-items': 'Lineitem', FolderB: 'Orderentry', '2024_reports': '_report', Task: 'Task', User: 'User' });
  });

  test('asl schema builds with buildSchema and equals what introspection returns', async () => {
    const generated = await generate({ ...subscriptions, ...collection('tickets', statusSchema) });
    const built = buildSchema(generated.sdl);
    assert.equal(printGeneratedSchema(built), generated.sdl);
    const introspected = buildClientSchema(introspectionFromSchema(generated.schema));
    assert.equal(printGeneratedSchema(introspected), generated.sdl);
  });
});
