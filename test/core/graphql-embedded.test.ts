import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  documentOffsetToFile, documentPositionToFile, fileOffsetToDocument, filePositionToDocument, findGraphqlDocuments,
  graphqlDocumentAt, graphqlHostOf, graphqlOperationAt,
} from '../../core/graphql/embedded';

/** The text without its single `|`, and the cursor's offset. */
function marked(text: string): { text: string; offset: number } {
  const offset = text.indexOf('|');
  assert.ok(offset >= 0 && text.indexOf('|', offset + 1) < 0, 'mark the cursor with exactly one |');
  return { text: text.slice(0, offset) + text.slice(offset + 1), offset };
}

function operationUnderCursor(fileName: string, fixture: string) {
  const { text, offset } = marked(fixture);
  const documents = findGraphqlDocuments(fileName, text);
  const document = graphqlDocumentAt(documents, offset);
  return { text, offset, documents, document, operation: document && graphqlOperationAt(document, offset) };
}

describe('graphqlHostOf', () => {
  test('by language id, file name or path', () => {
    assert.equal(graphqlHostOf('graphql'), 'graphql');
    assert.equal(graphqlHostOf('/app/queries/tasks.GQL'), 'graphql');
    assert.equal(graphqlHostOf('a.graphql'), 'graphql');
    for (const s of ['typescriptreact', 'javascript', 'x.ts', 'x.tsx', 'x.mjs', 'x.cjs', 'x.jsx']) assert.equal(graphqlHostOf(s), 'script', s);
    assert.equal(graphqlHostOf('schema.json'), undefined);
    assert.equal(graphqlHostOf('README'), undefined);
  });
});

describe('.graphql files', () => {
  test('the whole text is one document with each operation and its variables', () => {
    const { text, offset, document, operation } = operationUnderCursor('tasks.graphql', [
      '# all tasks',
      'query Tasks($limit: Int = 10, $owner: String!) { tasks(limit: $limit, query: { owner: $owner }) { _id } }',
      '',
      'mutation Rename($id: ObjectId!) { renameTask(input: { taskId: $id, name: "x" }) { na|me } }',
      'fragment T on Task { _id name }',
      'subscription { tasks { _id } }',
      '{ task { _id } }',
    ].join('\n'));
    assert.ok(document);
    assert.equal(document.origin, 'file');
    assert.equal(document.text, text);
    assert.deepEqual([document.start, document.end], [0, text.length]);
    assert.equal(document.syntaxError, undefined);
    assert.deepEqual(document.operations.map((o) => [o.kind, o.name]), [
      ['query', 'Tasks'], ['mutation', 'Rename'], ['subscription', undefined], ['query', undefined],
    ]);
    assert.deepEqual(document.operations[0].variables.map((v) => ({ name: v.name, type: v.type, defaultValue: v.defaultValue, required: v.required })), [
      { name: 'limit', type: 'Int', defaultValue: '10', required: false },
      { name: 'owner', type: 'String!', defaultValue: undefined, required: true },
    ]);
    assert.deepEqual(document.operations[0].variables[1].range, { start: { line: 1, character: 30 }, end: { line: 1, character: 45 } });
    assert.equal(operation?.name, 'Rename');
    assert.deepEqual(operation.range, { start: { line: 3, character: 0 }, end: { line: 3, character: 90 } });
    assert.deepEqual(operation.nameRange, { start: { line: 3, character: 9 }, end: { line: 3, character: 15 } });
    assert.equal(text.slice(operation.start, operation.end), text.split('\n')[3]);
    assert.ok(offset > operation.start && offset < operation.end);
    assert.deepEqual(document.fragments.map((f) => [f.name, f.typeCondition, f.range.start.line]), [['T', 'Task', 4]]);
    assert.deepEqual(document.operations[3].nameRange, { start: { line: 6, character: 0 }, end: { line: 6, character: 1 } });
  });

  test('a text that does not parse keeps the syntax error and the operations that parse on their own', () => {
    const { text, document, operation } = operationUnderCursor('x.gql', [
      'query Good { tasks { _id } }',
      'query Broken { tasks { _id }',
      'mutation Later($id: ObjectId) { deleteOneTask(query: { _id: $id }) { _id| } }',
    ].join('\n'));
    assert.ok(document?.syntaxError);
    assert.match(document.syntaxError.message, /Syntax Error/);
    assert.deepEqual(document.definitions.map((d) => 'name' in d.node && d.node.name?.value), ['Good', 'Later']);
    assert.deepEqual(document.operations.map((o) => o.name), ['Good', 'Later']);
    assert.equal(operation?.name, 'Later');
    assert.deepEqual(operation.variables.map((v) => v.name), ['id']);
    assert.equal(text.slice(operation.start, operation.end), text.split('\n')[2]);
  });

  test('blank and comment-only files have no error and no operations', () => {
    for (const text of ['', '  \n', '# just a note\n']) {
      const [document] = findGraphqlDocuments('a.graphql', text);
      assert.equal(document.syntaxError, undefined);
      assert.deepEqual(document.operations, []);
    }
  });
});

describe('JavaScript and TypeScript files', () => {
  test('gql and graphql tags, the call form and /* GraphQL */ strings', () => {
    const text = [
      "import { gql } from '@apollo/client';",
      'const A = gql`query A { tasks { _id } }`;',
      'const B = graphql`mutation B { deleteManyTasks { deletedCount } }`;',
      'const C = graphql(`query C { task { name } }`);',
      'const D = /* GraphQL */ `subscription D { tasks { _id } }`;',
      'const E = client.gql`{ tasks { name } }`;',
      'const notGraphql = `query X { y }`;',
      'const alsoNot = other`query Y { y }`;',
    ].join('\n');
    const documents = findGraphqlDocuments('queries.ts', text);
    assert.deepEqual(documents.map((d) => [d.origin, d.operations.map((o) => o.name ?? o.kind)]), [
      ['tag', ['A']], ['tag', ['B']], ['call', ['C']], ['comment', ['D']], ['tag', ['query']],
    ]);
    for (const d of documents) assert.equal(text.slice(d.start, d.end), d.text);
    assert.deepEqual(documents[0].range, { start: { line: 1, character: 14 }, end: { line: 1, character: 39 } });
  });

  test('the operation under the cursor, with file ranges, in a multi-line template', () => {
    const { text, offset, operation, document } = operationUnderCursor('App.tsx', [
      'export function App() {',
      '  const q = gql`',
      '    query Tasks($owner: String!) {',
      '      tasks(query: { owner: $owner }) { na|me }',
      '    }',
      '  `;',
      "  return <p>Don't {q}</p>;",
      '}',
    ].join('\n'));
    assert.equal(operation?.name, 'Tasks');
    assert.deepEqual(operation.range, { start: { line: 2, character: 4 }, end: { line: 4, character: 5 } });
    assert.deepEqual(operation.nameRange, { start: { line: 2, character: 10 }, end: { line: 2, character: 15 } });
    assert.deepEqual(operation.variables[0].range, { start: { line: 2, character: 16 }, end: { line: 2, character: 31 } });
    assert.equal(text.slice(operation.start, operation.end).split('\n')[0], 'query Tasks($owner: String!) {');
    const docOffset = fileOffsetToDocument(document!, offset)!;
    assert.equal(document!.text.slice(docOffset, docOffset + 2), 'me');
    assert.equal(documentOffsetToFile(document!, docOffset), offset);
  });

  test('positions map both ways between document and file', () => {
    const text = 'const x = 1;\nconst q = gql`query Q {\n  tasks { _id }\n}`;\n';
    const [document] = findGraphqlDocuments('q.js', text);
    assert.deepEqual(documentPositionToFile(document, { line: 0, character: 6 }), { line: 1, character: 20 });
    assert.deepEqual(documentPositionToFile(document, { line: 1, character: 2 }), { line: 2, character: 2 });
    assert.deepEqual(filePositionToDocument(document, { line: 1, character: 20 }), { line: 0, character: 6 });
    assert.deepEqual(filePositionToDocument(document, { line: 2, character: 4 }), { line: 1, character: 4 });
    assert.equal(filePositionToDocument(document, { line: 1, character: 3 }), undefined);
    assert.equal(filePositionToDocument(document, { line: 4, character: 0 }), undefined);
  });

  test('substitutions are blanked to the same length, keeping line breaks, and recorded', () => {
    const text = 'const q = gql`\n  query Q { tasks { ...TaskFields } }\n  ${TASK_FIELDS}\n  ${a ? `x` : {b: `y`}.b}\n`;';
    const [document, ...others] = findGraphqlDocuments('q.ts', text);
    assert.equal(others.length, 0, 'templates nested in substitutions are not GraphQL');
    assert.equal(document.text.length, document.end - document.start);
    assert.equal(document.text.split('\n').length, text.slice(document.start, document.end).split('\n').length);
    assert.deepEqual(document.substitutions.map((s) => s.expression), ['TASK_FIELDS', 'a ? `x` : {b: `y`}.b']);
    assert.equal(text.slice(document.substitutions[0].start, document.substitutions[0].end), '${TASK_FIELDS}');
    assert.ok(!document.text.includes('TASK_FIELDS'));
    assert.equal(document.syntaxError, undefined);
    assert.deepEqual(document.operations.map((o) => o.name), ['Q']);
  });

  test('a graphql template inside a substitution of another template is found', () => {
    const text = 'const s = `${gql`query Inner { tasks { _id } }`}`;';
    const documents = findGraphqlDocuments('a.js', text);
    assert.deepEqual(documents.map((d) => d.operations[0]?.name), ['Inner']);
  });

  test('backticks in comments, strings and regular expressions are not templates', () => {
    const text = [
      '// gql`query Commented { a }`',
      '/* gql`query Block { a }` */',
      "const s = 'gql`query Single { a }`';",
      'const d = "gql`query Double { a }`";',
      'const r = /gql`[`]/g; const ratio = a / b / c;',
      'const q = gql`query Real { tasks { _id } }`;',
      'return /`/.test(x) ? gql`query AfterRegex { a }` : null;',
    ].join('\n');
    assert.deepEqual(findGraphqlDocuments('a.ts', text).map((d) => d.operations[0]?.name), ['Real', 'AfterRegex']);
  });

  test('escaped backticks stay inside the template; an unterminated template yields nothing', () => {
    const escaped = findGraphqlDocuments('a.js', 'const q = gql`query E { a(s: "\\`") }`; const r = gql`{ b }`;');
    assert.equal(escaped.length, 2);
    assert.deepEqual(findGraphqlDocuments('a.js', 'const q = gql`query Open { a '), []);
  });

  test('a template that does not parse reports the error at its file offset', () => {
    const text = 'const q = gql`query Q { tasks { _id }`;';
    const [document] = findGraphqlDocuments('a.ts', text);
    assert.ok(document.syntaxError);
    assert.equal(document.syntaxError.offset, text.indexOf('`;'));
    assert.deepEqual(document.syntaxError.range.start, { line: 0, character: text.indexOf('`;') });
  });
});
