// GraphQL in the language server over stdio: .graphql files and JS/TS templates against the example app's
// generated schema (diagnostics, completion, hover, definition, symbols), live schema changes, two apps.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { CompletionItem, CompletionList, DocumentSymbol, Hover, Location, PublishDiagnosticsParams } from 'vscode-languageserver';
import { GRAPHQL_APP_REQUEST, GRAPHQL_FRAGMENTS_REQUEST, type GraphqlAppResult, type GraphqlFragmentsResult } from '../../core/protocol';
import { REPO_ROOT, writeApp } from '../helpers/disk';
import { LspClient } from '../helpers/lsp';

const EXAMPLE = path.join(REPO_ROOT, 'examples/todo-tracker');

/** The text without its single `|`, and the cursor's position. */
function cursor(marked: string): { text: string; position: { line: number; character: number } } {
  const offset = marked.indexOf('|');
  assert.ok(offset >= 0 && marked.indexOf('|', offset + 1) < 0, 'mark the cursor with exactly one |');
  const before = marked.slice(0, offset).split('\n');
  return { text: marked.slice(0, offset) + marked.slice(offset + 1), position: { line: before.length - 1, character: before[before.length - 1].length } };
}

class Editor {
  private versions = new Map<string, number>();
  constructor(readonly client: LspClient) {}

  async open(file: string, text: string, languageId = 'graphql'): Promise<string> {
    const uri = pathToFileURL(file).href;
    if (this.versions.has(uri)) return this.change(file, text);
    this.versions.set(uri, 1);
    await this.client.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId, version: 1, text } });
    return uri;
  }

  async change(file: string, text: string): Promise<string> {
    const uri = pathToFileURL(file).href;
    const version = (this.versions.get(uri) ?? 1) + 1;
    this.versions.set(uri, version);
    await this.client.connection.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
    return uri;
  }

  request<T>(method: string, file: string, position: { line: number; character: number }): Promise<T> {
    return this.client.connection.sendRequest<T>(method, { textDocument: { uri: pathToFileURL(file).href }, position });
  }
}

const messages = (p: PublishDiagnosticsParams) => p.diagnostics.map((d) => d.message);

describe('GraphQL over stdio, example app', () => {
  let root: string;
  let client: LspClient;
  let editor: Editor;
  const queryFile = () => path.join(root, 'queries/tasks.graphql');
  const taskSchema = () => path.join(root, 'data_sources/mongodb-atlas/tracker/Task/schema.json');

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-graphql-'));
    fs.cpSync(EXAMPLE, root, { recursive: true });
    client = new LspClient();
    await client.initialize(root);
    editor = new Editor(client);
    // GraphQL diagnostics are published once the app is loaded.
    await editor.open(queryFile(), '{ task { _id } }\n');
    await client.diagnosticsFor(queryFile(), () => true);
  });
  after(async () => { await client.close(); fs.rmSync(root, { recursive: true, force: true }); });

  test('an unknown field is reported with the graphql-js message at its range; a fixed query has none', async () => {
    const text = 'query Open {\n  tasks(query: { isComplete: false }) {\n    name\n    nope\n  }\n}\n';
    await editor.open(queryFile(), text);
    const published = await client.diagnosticsFor(queryFile(), (p) => p.diagnostics.length > 0);
    assert.deepEqual(messages(published), ['Cannot query field "nope" on type "Task". Did you mean "name"?']);
    assert.deepEqual(published.diagnostics[0].range, { start: { line: 3, character: 4 }, end: { line: 3, character: 8 } });
    await editor.change(queryFile(), text.replace('nope', 'status'));
    await client.diagnosticsFor(queryFile(), (p) => p.diagnostics.length === 0);
  });

  test('document-wide rules, problems in a spread fragment reported once, and results that move with their definition', async () => {
    const text = 'query A { tasks { ...F } }\nquery A($unused: Int) { task { _id } }\nfragment F on Task { nope }\n';
    await editor.open(queryFile(), text);
    const expected = [
      [0, 'There can be only one operation named "A".'],
      [1, 'There can be only one operation named "A".'],
      [1, 'Variable "$unused" is never used in operation "A".'],
      [2, 'Cannot query field "nope" on type "Task". Did you mean "name"?'],
    ];
    const lines = (p: PublishDiagnosticsParams) => p.diagnostics.map((d) => [d.range.start.line, d.message]).sort((a, b) => Number(a[0]) - Number(b[0]) || String(a[1]).localeCompare(String(b[1])));
    await client.diagnosticsFor(queryFile(), (p) => JSON.stringify(lines(p)) === JSON.stringify(expected));
    await editor.change(queryFile(), `# moved\n\n${text}`);
    await client.diagnosticsFor(queryFile(), (p) => JSON.stringify(lines(p)) === JSON.stringify(expected.map(([line, m]) => [Number(line) + 2, m])));
  });

  test('while the text does not parse, its syntax error alone is reported at its token; then the problems come back', async () => {
    const text = 'query A { tasks { nope } }\nquery B { task { _id } }\n';
    await editor.open(queryFile(), text);
    await client.diagnosticsFor(queryFile(), (p) => messages(p).length === 1 && /"nope"/.test(messages(p)[0]));
    await editor.change(queryFile(), text.replace('task { _id }', 'task(query: ) { _id }'));
    const broken = await client.diagnosticsFor(queryFile(), (p) => messages(p).some((m) => m.startsWith('Syntax Error')));
    assert.deepEqual(broken.diagnostics.map((d) => [d.message, d.range]), [
      ['Syntax Error: Unexpected ")".', { start: { line: 1, character: 22 }, end: { line: 1, character: 23 } }],
    ]);
    await editor.change(queryFile(), text);
    await client.diagnosticsFor(queryFile(), (p) => messages(p).length === 1 && /"nope"/.test(messages(p)[0]));
  });

  test('custom resolvers are part of the schema: arguments are checked', async () => {
    await editor.open(queryFile(), 'mutation { renameTask(input: { taskId: "5f1f1f1f1f1f1f1f1f1f1f1f" }) { name } }\n');
    await client.diagnosticsFor(queryFile(), (p) => messages(p).some((m) => /Field "RenameTaskInput.name" of required type "String!" was not provided/.test(m)));
  });

  test('editing a collection schema changes the diagnostics of an open .graphql file', async () => {
    await editor.open(queryFile(), '{ tasks { name estimate } }\n');
    await client.diagnosticsFor(queryFile(), (p) => messages(p).includes('Cannot query field "estimate" on type "Task".'));
    const schema = JSON.parse(fs.readFileSync(taskSchema(), 'utf8'));
    schema.properties.estimate = { bsonType: 'double' };
    await editor.open(taskSchema(), JSON.stringify(schema, null, 2), 'json');
    await client.diagnosticsFor(queryFile(), (p) => p.diagnostics.length === 0);
    delete schema.properties.estimate;
    await editor.change(taskSchema(), JSON.stringify(schema, null, 2));
    await client.diagnosticsFor(queryFile(), (p) => messages(p).includes('Cannot query field "estimate" on type "Task".'));
  });

  test('completion lists the fields of the type under the cursor, custom resolver fields included', async () => {
    const { text, position } = cursor('query { tasks { | } }\n');
    await editor.open(queryFile(), text);
    const list = await editor.request<CompletionList>('textDocument/completion', queryFile(), position);
    const labels = list.items.map((i) => i.label);
    for (const field of ['_id', 'name', 'status', 'checklist', 'assignee', 'project', 'history']) assert.ok(labels.includes(field), `${field} in ${labels}`);
    assert.equal(list.items.find((i) => i.label === 'name')?.detail, 'String!');
  });

  test('completion of root fields, arguments, input fields, enum values and variables', async () => {
    const labelsAt = async (marked: string) => {
      const { text, position } = cursor(marked);
      await editor.open(queryFile(), text);
      return (await editor.request<CompletionList>('textDocument/completion', queryFile(), position)).items.map((i) => i.label);
    };
    const roots = await labelsAt('query { t| }\n');
    for (const f of ['task', 'tasks', 'taskSummary']) assert.ok(roots.includes(f), `${f} in ${roots}`);
    assert.ok((await labelsAt('mutation { | }\n')).includes('renameTask'));
    const args = await labelsAt('query { tasks(|) { _id } }\n');
    for (const a of ['query', 'limit', 'sortBy']) assert.ok(args.includes(a), `${a} in ${args}`);
    const inputFields = await labelsAt('query { tasks(query: { isC| }) { _id } }\n');
    assert.ok(inputFields.includes('isComplete_ne'), inputFields.join());
    const enumValues = await labelsAt('query { tasks(sortBy: |) { _id } }\n');
    assert.ok(enumValues.includes('NAME_ASC'), enumValues.join());
    const variables = await labelsAt('query Q($owner: String) { tasks(query: { name: | }) { _id } }\n');
    assert.ok(variables.includes('$owner'), variables.join());
  });

  test('hover on a custom resolver field names its function and its input and payload formats', async () => {
    const { text, position } = cursor('mutation { rename|Task(input: { taskId: "x", name: "y" }) { name } }\n');
    await editor.open(queryFile(), text);
    const hover = await editor.request<Hover>('textDocument/hover', queryFile(), position);
    const value = (hover.contents as { value: string }).value;
    assert.match(value, /Mutation\.renameTask/);
    assert.match(value, /function: `renameTask` \(`functions\/renameTask\.js`\)/);
    assert.match(value, /input: `custom` → `RenameTaskInput`/);
    assert.match(value, /payload: `generated` → `Task`/);
    assert.match(value, /config: `graphql\/custom_resolvers\/mutation_renameTask\.json`/);
  });

  test('hover on a generated field shows its type and the schema property it comes from', async () => {
    const { text, position } = cursor('query { tasks { dueD|ate } }\n');
    await editor.open(queryFile(), text);
    const value = ((await editor.request<Hover>('textDocument/hover', queryFile(), position)).contents as { value: string }).value;
    assert.match(value, /Task\.dueDate: DateTime/);
    assert.match(value, /the property `dueDate` in `data_sources\/mongodb-atlas\/tracker\/Task\/schema\.json`/);
  });

  test('go to definition: generated field → schema.json property, embedded field, resolver field → its config, fragment → its definition', async () => {
    const { text } = cursor('query { tasks { ...F checklist { done } } }\nfragment F on Task { priority }\nmutation { renameTask(input: { taskId: "x", name: "y" }) { _id } }\n|');
    await editor.open(queryFile(), text);
    const at = (needle: string, delta = 1) => {
      const offset = text.indexOf(needle) + delta;
      const lines = text.slice(0, offset).split('\n');
      return { line: lines.length - 1, character: lines[lines.length - 1].length };
    };
    const definition = (needle: string, delta = 1) => editor.request<Location[]>('textDocument/definition', queryFile(), at(needle, delta));
    const lineOf = (file: string, range: Location['range']) => fs.readFileSync(file, 'utf8').split('\n')[range.start.line].slice(range.start.character, range.end.character);

    const [checklist] = await definition('checklist');
    assert.equal(checklist.uri, pathToFileURL(taskSchema()).href);
    assert.equal(lineOf(taskSchema(), checklist.range), '"checklist"');
    const [done] = await definition('done');
    assert.equal(lineOf(taskSchema(), done.range), '"done"');
    const [resolver] = await definition('renameTask');
    const config = path.join(root, 'graphql/custom_resolvers/mutation_renameTask.json');
    assert.equal(resolver.uri, pathToFileURL(config).href);
    assert.equal(lineOf(config, resolver.range), '"renameTask"');
    for (const delta of [1, 3]) {
      const [fragment] = await definition('...F', delta);
      assert.equal(fragment.uri, pathToFileURL(queryFile()).href);
      assert.deepEqual(fragment.range, { start: { line: 1, character: 9 }, end: { line: 1, character: 10 } });
    }
  });

  test('a schema file (SDL, as written for other tools) is not checked as queries', async () => {
    const file = path.join(root, 'schema.graphql');
    await editor.open(file, 'type Query { tasks: [Task] }\ntype Task { name: String }\n');
    const published = await client.diagnosticsFor(file, () => true);
    assert.deepEqual(published.diagnostics, []);
  });

  test('document symbols: operations and fragments with their fields', async () => {
    await editor.open(queryFile(), 'query Open {\n  tasks { name }\n}\nmutation { archiveCompletedTasks { status } }\nfragment F on Task { priority }\n');
    const symbols = await client.connection.sendRequest<DocumentSymbol[]>('textDocument/documentSymbol', { textDocument: { uri: pathToFileURL(queryFile()).href } });
    assert.deepEqual(symbols.map((s) => [s.name, s.detail, s.range.start.line]), [['Open', 'query', 0], ['(anonymous mutation)', 'mutation', 3], ['F', 'fragment on Task', 4]]);
    assert.deepEqual(symbols[0].children?.map((c) => [c.name, c.children?.map((g) => g.name)]), [['tasks', ['name']]]);
  });

  test('templates in a TypeScript file: diagnostics, completion and definition at file positions', async () => {
    const file = path.join(root, 'web/src/queries.ts');
    const marked = [
      "import { gql } from '@apollo/client';",
      'const FIELDS = gql`fragment TaskFields on Task { name }`;',
      'export const OPEN = gql`',
      '  query Open {',
      '    tasks { ...TaskFields wrong | }',
      '  }',
      '  ${FIELDS}',
      '`;',
      'const plain = `query { nothing }`;',
    ].join('\n');
    const { text, position } = cursor(marked);
    await editor.open(file, text, 'typescript');
    const published = await client.diagnosticsFor(file, (p) => p.diagnostics.length > 0);
    assert.deepEqual(messages(published), ['Cannot query field "wrong" on type "Task".']);
    assert.deepEqual(published.diagnostics[0].range, { start: { line: 4, character: 26 }, end: { line: 4, character: 31 } });
    const list = await editor.request<CompletionList>('textDocument/completion', file, position);
    assert.ok(list.items.some((i) => i.label === 'priority'), list.items.map((i) => i.label).join());
    const [fragment] = await editor.request<Location[]>('textDocument/definition', file, { line: 4, character: 17 });
    assert.deepEqual(fragment.range, { start: { line: 1, character: 28 }, end: { line: 1, character: 38 } });
    const outside = await editor.request<CompletionList | null>('textDocument/completion', file, { line: 8, character: 20 });
    assert.ok(!outside || !outside.items.some((i) => i.label === 'tasks'));
  });

  test('a function file keeps its app diagnostics beside GraphQL ones', async () => {
    const file = path.join(root, 'functions/renameTask.js');
    const original = fs.readFileSync(file, 'utf8');
    await editor.open(file, `${original}\nconst q = /* GraphQL */ \`{ tasks { missing } }\`;\n`, 'javascript');
    const published = await client.diagnosticsFor(file, (p) => messages(p).some((m) => m.includes('"missing"')));
    assert.ok(published.diagnostics.every((d) => d.source === 'asl graphql' || d.source === 'asl'));
  });
});

describe('GraphQL with two apps in one workspace', () => {
  let workspace: string;
  let client: LspClient;
  let editor: Editor;

  const app = (title: string, property: string) => ({
    'realm_config.json': { config_version: 20210101, app_id: `${title.toLowerCase()}-abcde`, name: `${title}App`, location: 'US-VA', deployment_model: 'GLOBAL' },
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    [`data_sources/mongodb-atlas/db/${title}/schema.json`]: { title, bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, [property]: { bsonType: 'string' } } },
  });

  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-graphql-two-'));
    writeApp(app('Book', 'isbn'), path.join(workspace, 'library'));
    writeApp(app('Film', 'director'), path.join(workspace, 'cinema'));
    client = new LspClient();
    await client.initialize(workspace);
    editor = new Editor(client);
  });
  after(async () => { await client.close(); fs.rmSync(workspace, { recursive: true, force: true }); });

  test('a file in an app folder uses that app; outside, the setting picks one', async () => {
    const inLibrary = path.join(workspace, 'library/queries/q.graphql');
    await editor.open(inLibrary, '{ books { isbn director } }\n');
    const library = await client.diagnosticsFor(inLibrary, (p) => p.diagnostics.length > 0);
    assert.deepEqual(messages(library), ['Cannot query field "director" on type "Book".']);
    const inCinema = path.join(workspace, 'cinema/q.gql');
    await editor.open(inCinema, '{ films { director } }\n');
    await client.diagnosticsFor(inCinema, (p) => p.diagnostics.length === 0);

    const outside = path.join(workspace, 'shared/q.graphql');
    await editor.open(outside, '{ films { director } }\n');
    const none = await client.connection.sendRequest<GraphqlAppResult>(GRAPHQL_APP_REQUEST, { uri: pathToFileURL(outside).href });
    assert.equal(none.app, undefined);
    assert.deepEqual(none.choices.map((c) => c.name).sort(), ['BookApp', 'CinemaApp'.replace('Cinema', 'Film')].sort());

    await client.connection.sendNotification('workspace/didChangeConfiguration', { settings: { appServicesLocal: { graphql: { app: 'FilmApp' } } } });
    await client.diagnosticsFor(outside, (p) => p.diagnostics.length === 0);
    const chosen = await client.connection.sendRequest<GraphqlAppResult>(GRAPHQL_APP_REQUEST, { uri: pathToFileURL(outside).href });
    assert.deepEqual(chosen.app, { root: path.join(workspace, 'cinema'), name: 'FilmApp', reason: 'setting' });
    await client.connection.sendNotification('workspace/didChangeConfiguration', { settings: { appServicesLocal: { graphql: { app: path.join(workspace, 'library') } } } });
    const switched = await client.diagnosticsFor(outside, (p) => p.diagnostics.length > 0);
    assert.match(messages(switched).join(), /Cannot query field "films" on type "Query"/);
  });

  test('turning the features off clears the GraphQL diagnostics', async () => {
    const inLibrary = path.join(workspace, 'library/queries/q.graphql');
    await editor.open(inLibrary, '{ books { nope } }\n');
    await client.diagnosticsFor(inLibrary, (p) => p.diagnostics.length > 0);
    await client.connection.sendNotification('workspace/didChangeConfiguration', { settings: { appServicesLocal: { graphql: { enable: false } } } });
    await client.diagnosticsFor(inLibrary, (p) => p.diagnostics.length === 0);
    const list = await editor.request<CompletionList | null>('textDocument/completion', inLibrary, { line: 0, character: 10 });
    assert.ok(!list || list.items.length === 0);
    await client.connection.sendNotification('workspace/didChangeConfiguration', { settings: { appServicesLocal: { graphql: { enable: true } } } });
    await client.diagnosticsFor(inLibrary, (p) => p.diagnostics.length > 0);
  });
});

describe('GraphQL fragments defined in other files', () => {
  let workspace: string;
  let client: LspClient;
  let editor: Editor;
  const bookApp = {
    'realm_config.json': { config_version: 20210101, app_id: 'library-abcde', name: 'LibraryApp', location: 'US-VA', deployment_model: 'GLOBAL' },
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    'data_sources/mongodb-atlas/db/Book/schema.json': { title: 'Book', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, isbn: { bsonType: 'string' }, title: { bsonType: 'string' } } },
  };
  const filmApp = {
    'realm_config.json': { config_version: 20210101, app_id: 'cinema-abcde', name: 'CinemaApp', location: 'US-VA', deployment_model: 'GLOBAL' },
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    'data_sources/mongodb-atlas/db/Film/schema.json': { title: 'Film', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, director: { bsonType: 'string' } } },
  };
  const library = (rel: string) => path.join(workspace, 'library', rel);
  const query = () => library('queries/books.graphql');

  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-graphql-fragments-'));
    writeApp(bookApp, path.join(workspace, 'library'));
    writeApp(filmApp, path.join(workspace, 'cinema'));
    // On disk only, never opened: found by the server's search of the workspace.
    fs.mkdirSync(library('fragments'), { recursive: true });
    fs.writeFileSync(library('fragments/book.graphql'), '# shared\nfragment BookFields on Book { _id isbn ...Titled }\nfragment Titled on Book { title }\n');
    fs.writeFileSync(path.join(workspace, 'cinema/film.graphql'), 'fragment FilmFields on Film { director }\n');
    fs.mkdirSync(library('node_modules/pkg'), { recursive: true });
    fs.writeFileSync(library('node_modules/pkg/dep.graphql'), 'fragment DependencyFields on Book { title }\n');
    client = new LspClient();
    await client.initialize(workspace);
    editor = new Editor(client);
  });
  after(async () => { await client.close(); fs.rmSync(workspace, { recursive: true, force: true }); });

  test('a spread of a fragment in another file of the same app is known: validated with it, completed, and its definition found', async () => {
    const { text, position } = cursor('query Books {\n  books { ...BookFields title }\n}\nquery More { books { ...| } }\n');
    await editor.open(query(), text.replace('{ ... }', '{ title }'));
    await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 0);
    const [definition] = await editor.request<Location[]>('textDocument/definition', query(), { line: 1, character: 14 });
    assert.equal(definition.uri, pathToFileURL(library('fragments/book.graphql')).href);
    assert.deepEqual(definition.range, { start: { line: 1, character: 9 }, end: { line: 1, character: 19 } });
    await editor.change(query(), text);
    const list = await editor.request<CompletionList | CompletionItem[]>('textDocument/completion', query(), position);
    const labels = (Array.isArray(list) ? list : list.items).map((i) => i.label);
    assert.ok(labels.includes('BookFields'), JSON.stringify(labels));
    assert.ok(!labels.includes('FilmFields') && !labels.includes('DependencyFields'), JSON.stringify(labels));
  });

  test('the query runner asks for the fragments its operation spreads from other files, and gets them with those they spread', async () => {
    await editor.open(query(), '{ books { ...BookFields ...FilmFields } }\nfragment Local on Book { _id }\n');
    const result = await client.connection.sendRequest<GraphqlFragmentsResult>(GRAPHQL_FRAGMENTS_REQUEST, { uri: pathToFileURL(query()).href, names: ['BookFields', 'FilmFields', 'Local'] });
    assert.deepEqual(result.fragments, [
      { name: 'BookFields', file: library('fragments/book.graphql'), text: 'fragment BookFields on Book { _id isbn ...Titled }' },
      { name: 'Titled', file: library('fragments/book.graphql'), text: 'fragment Titled on Book { title }' },
    ]);
    const hostile = await client.connection.sendRequest<GraphqlFragmentsResult>(GRAPHQL_FRAGMENTS_REQUEST, { uri: pathToFileURL(query()).href, names: 'BookFields' });
    assert.deepEqual(hostile, { fragments: [] });
  });

  test('fragments of another app, or under node_modules, are not used', async () => {
    await editor.open(query(), '{ books { ...FilmFields ...DependencyFields } }\n');
    const published = await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 2);
    assert.deepEqual(messages(published).sort(), ['Unknown fragment "DependencyFields".', 'Unknown fragment "FilmFields".']);
  });

  test('editing the fragment in its open document, or on disk, checks the files that spread it again', async () => {
    await editor.open(query(), '{ books { ...BookFields } }\n');
    await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 0);
    const fragmentFile = library('fragments/book.graphql');
    await editor.open(fragmentFile, 'fragment BookFields on Book { _id isbn nope }\n');
    // The fragment's own mistake is reported in its file, not in every file that spreads it.
    const own = await client.diagnosticsFor(fragmentFile, (p) => p.diagnostics.length === 1);
    assert.match(messages(own)[0], /Cannot query field "nope" on type "Book"/);
    await editor.change(fragmentFile, 'fragment Renamed on Book { _id }\n');
    const unknown = await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 1);
    assert.deepEqual(messages(unknown), ['Unknown fragment "BookFields".']);
    await client.connection.sendNotification('textDocument/didClose', { textDocument: { uri: pathToFileURL(fragmentFile).href } });
    await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 0);

    fs.writeFileSync(fragmentFile, 'fragment Other on Book { _id }\n');
    await client.connection.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(fragmentFile).href, type: 2 }] });
    await client.diagnosticsFor(query(), (p) => messages(p).join() === 'Unknown fragment "BookFields".');
    const created = library('fragments/more.gql');
    fs.writeFileSync(created, 'fragment BookFields on Book { title }\n');
    await client.connection.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(created).href, type: 1 }] });
    await client.diagnosticsFor(query(), (p) => p.diagnostics.length === 0);
  });
});
