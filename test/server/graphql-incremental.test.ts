// The GraphQL documents are parsed one top-level definition at a time, with each parse and each validation
// kept by its text (core/graphql/embedded.ts, server/features/graphql.ts), so an edit re-parses only what it
// touched. These properties check that this gives what graphql-js and graphql-language-service give for the
// whole text: the same definitions at the same offsets, the same syntax error, the same validation problems,
// after any sequence of edits (so that nothing cached goes stale).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { buildSchema, GraphQLError, Lexer, parse, print, Source, TokenKind } from 'graphql';
import { getDiagnostics } from 'graphql-language-service';
import { definitionOffsetToDocument, findGraphqlDocuments } from '../../core/graphql/embedded';
import { GraphqlDocuments, graphqlDiagnostics, graphqlSymbols } from '../../server/features/graphql';

const SEED = Number(process.env.ASL_FUZZ_SEED ?? 20261124);
const RUNS = Number(process.env.ASL_FUZZ_RUNS ?? 400);

const schema = buildSchema(`
  type Query { tasks(limit: Int, owner: String): [Task] task(id: ID!): Task me: User }
  type Mutation { rename(id: ID!, name: String!): Task }
  type Task { _id: ID name: String done: Boolean owner: User old: String @deprecated(reason: "use name") }
  type User { name: String tasks: [Task] }
`);

/** Pieces of GraphQL text: valid definitions, mistakes, and text that breaks the syntax. */
const pieces = [
  'query A { tasks { _id name } }',
  'query B($limit: Int) {\n  tasks(limit: $limit) {\n    name\n    owner { name }\n  }\n}',
  'query C { tasks { nam } }',
  'query A { me { name } }',
  '{ me { name } }',
  'query D { tasks { ...T } }',
  'query E { task(id: "}{") { ...Missing } }',
  'query F($unused: Int) { tasks { old } }',
  'fragment T on Task { _id owner { ...U } }',
  'fragment U on User { name }',
  'fragment T on Task { done }',
  'fragment Cycle on Task { owner { tasks { ...Cycle } } }',
  'mutation M($id: ID!) { rename(id: $id, name: "x") { name } }',
  'mutation { rename(id: 1) { name } }',
  'query G {\n  tasks {\n    name\nquery H { me { name } }',
  'query I { tasks(limit: """\n  }{ block\n""") { name } }',
  '# a comment with { braces and query words\nquery J { me { name } }',
  'query K { tasks { name',
  '}',
  'query L(',
  'type Extra { x: Int }',
  'query M2 { tasks { query subscription } }',
  '   ',
  'query N { tasks @skip(if: true) { _id } }',
  'query Bad { ta$ks }',
];

const textArbitrary = fc.array(fc.tuple(fc.constantFrom(...pieces), fc.constantFrom('\n', '\n\n', ' ', '\n  ')), { minLength: 0, maxLength: 8 })
  .map((parts) => parts.map(([piece, gap]) => piece + gap).join(''));

/** Texts one after another, each an edit of the one before: insert, delete or replace a stretch. */
const editSequenceArbitrary = textArbitrary.chain((first) => fc.array(
  fc.tuple(fc.nat(), fc.nat({ max: 12 }), fc.constantFrom('', 'x', '{', '}', ' name ', '\nquery Z { me { name } }\n', '...T', '(', '"', '#')),
  { minLength: 1, maxLength: 6 },
).map((edits) => {
  const texts = [first];
  for (const [at, length, insert] of edits) {
    const text = texts[texts.length - 1];
    const from = text.length ? at % (text.length + 1) : 0;
    texts.push(text.slice(0, from) + insert + text.slice(Math.min(text.length, from + length)));
  }
  return texts;
}));

/** graphql-js on the whole text: the definitions (printed, with their offsets) or the syntax error. */
function wholeText(text: string): { definitions?: Array<[number, string]>; error?: { message: string; offset: number } } {
  try {
    return { definitions: parse(text).definitions.map((d) => [d.loc!.start, print(d)]) };
  } catch (e) {
    assert.ok(e instanceof GraphQLError);
    return { error: { message: e.message, offset: e.positions?.[0] ?? 0 } };
  }
}

/** Only whitespace and comments: not a syntax error to report. */
function blankText(text: string): boolean {
  try {
    return new Lexer(new Source(text)).advance().kind === TokenKind.EOF;
  } catch {
    return false;
  }
}

describe('GraphQL documents parsed one definition at a time', () => {
  test(`${RUNS} edit sequences: the same definitions, syntax errors and validation problems as the whole text`, () => {
    const documents = new GraphqlDocuments();
    let checkedTexts = 0, syntaxErrors = 0, problems = 0;
    fc.assert(fc.property(editSequenceArbitrary, (texts) => {
      for (const text of texts) {
        checkedTexts++;
        const [document] = documents.of('q.graphql', text);
        const expected = wholeText(text);
        if (expected.definitions) {
          assert.equal(document.syntaxError, undefined, text);
          assert.deepEqual(document.definitions.map((d) => [definitionOffsetToDocument(d, d.node.loc!.start), print(d.node)]), expected.definitions, text);
        } else if (blankText(text)) {
          assert.equal(document.syntaxError, undefined, text);
        } else {
          syntaxErrors++;
          assert.deepEqual(document.syntaxError && { message: document.syntaxError.message, offset: document.syntaxError.offset }, expected.error, text);
        }
        const ours = graphqlDiagnostics(schema, [document]);
        const isSchema = expected.definitions?.some((d) => !/^(query|mutation|subscription|fragment|\{)/.test(d[1]));
        if (isSchema) {
          assert.deepEqual(ours, [], text);
          continue;
        }
        if (expected.error) {
          if (blankText(text)) {
            assert.deepEqual(ours, [], text);
            continue;
          }
          // Alone, at the error's offset; at the end of the text, at its last character.
          const offset = text.slice(expected.error.offset).trim() ? expected.error.offset : text.trimEnd().length - 1;
          const lines = text.slice(0, offset).split('\n');
          assert.deepEqual(ours.map((d) => [d.message, d.range.start]), [[expected.error.message, { line: lines.length - 1, character: lines[lines.length - 1].length }]], text);
          continue;
        }
        // graphql-language-service validates the whole text as one document. Where two fragments share a
        // name, it follows only one of them; we check each.
        const reference = getDiagnostics(text, schema);
        const key = (line: number, character: number, message: string) => `${line}:${character} ${message}`;
        const ourKeys = new Set(ours.map((d) => key(d.range.start.line, d.range.start.character, d.message)));
        const referenceKeys = new Set(reference.map((d) => key(d.range.start.line, d.range.start.character, d.message)));
        problems += ours.length;
        if (ours.some((d) => d.message.startsWith('There can be only one fragment named'))) {
          for (const k of referenceKeys) assert.ok(ourKeys.has(k), `${k} missing for ${JSON.stringify(text)}`);
        } else {
          assert.deepEqual(ourKeys, referenceKeys, text);
        }
        for (const symbol of graphqlSymbols([document])) {
          assert.equal(text.split('\n')[symbol.selectionRange.start.line].slice(symbol.selectionRange.start.character, symbol.selectionRange.end.character),
            symbol.name.startsWith('(anonymous') ? text.split('\n')[symbol.selectionRange.start.line][symbol.selectionRange.start.character] === '{' ? '{' : symbol.detail : symbol.name, text);
        }
      }
    }), { seed: SEED, numRuns: RUNS });
    // The generated texts must exercise each outcome, or the property says little.
    assert.ok(syntaxErrors > RUNS / 4, `texts with a syntax error: ${syntaxErrors} of ${checkedTexts}`);
    assert.ok(problems > RUNS, `validation problems compared: ${problems}`);
  });

  test('an edit inside one definition re-parses only that definition: the others keep their parsed nodes', () => {
    const text = 'query A { tasks { name } }\nquery B { me { name } }\nfragment T on Task { _id }\n';
    const [before] = findGraphqlDocuments('q.graphql', text);
    const [after] = findGraphqlDocuments('q.graphql', text.replace('me { name }', 'me { name tasks { _id } }'));
    assert.equal(after.definitions[0].node, before.definitions[0].node);
    assert.notEqual(after.definitions[1].node, before.definitions[1].node);
    assert.equal(after.definitions[2].node, before.definitions[2].node);
    assert.equal(definitionOffsetToDocument(after.definitions[2], after.definitions[2].node.loc!.start), text.indexOf('fragment') + ' tasks { _id }'.length);
  });

  test('a syntax error is reported at the token it names, alone, and the operations that parse are still found', () => {
    const text = 'query A { tasks { nam } }\nquery B { tasks(limit: ) { name } }\nquery C { me { name } }\n';
    const [document] = findGraphqlDocuments('q.graphql', text);
    assert.deepEqual(document.operations.map((o) => o.name), ['A', 'C']);
    const diagnostics = graphqlDiagnostics(schema, [document]);
    assert.equal(diagnostics.length, 1);
    assert.equal(diagnostics[0].message, 'Syntax Error: Unexpected ")".');
    assert.deepEqual(diagnostics[0].range, { start: { line: 1, character: 23 }, end: { line: 1, character: 24 } });
    const [unclosed] = findGraphqlDocuments('q.graphql', 'query A { tasks { name }\n');
    assert.deepEqual(graphqlDiagnostics(schema, [unclosed]).map((d) => [d.message, d.range.start, d.range.end]),
      [['Syntax Error: Expected Name, found <EOF>.', { line: 0, character: 23 }, { line: 0, character: 24 }]]);
  });
});
