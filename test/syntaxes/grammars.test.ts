// The grammars in syntaxes/ tokenized by the engine VS Code uses (vscode-textmate + vscode-oniguruma), wired as
// package.json contributes them (injections from `injectTo`). Hosts are small grammars of our own
// (fixtures/host-grammars.json) standing in for VS Code's TypeScript, JSON and Markdown grammars; when the
// editor tests' VS Code build is installed, the same samples are also tokenized with its real grammars.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import * as oniguruma from 'vscode-oniguruma';
import { INITIAL, parseRawGrammar, Registry, type IGrammar } from 'vscode-textmate';
import { REPO_ROOT } from '../helpers/disk';

interface GrammarContribution { scopeName: string; path: string; injectTo?: string[] }
const contributed = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { contributes: { grammars: GrammarContribution[] } }).contributes.grammars;
const fixtureHosts = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/host-grammars.json'), 'utf8')) as Record<string, unknown>;
const vscodeExtensions = path.join(REPO_ROOT, 'test/editor/.cache/cs/node_modules/code-server/lib/vscode/extensions');
const realHosts: Record<string, string> = {
  'source.ts': 'typescript-basics/syntaxes/TypeScript.tmLanguage.json',
  'source.json': 'json/syntaxes/JSON.tmLanguage.json',
  'text.html.markdown': 'markdown-basics/syntaxes/markdown.tmLanguage.json',
};
const haveRealHosts = Object.values(realHosts).every((p) => fs.existsSync(path.join(vscodeExtensions, p)));

let onig: Promise<void> | undefined;
function loadOnig(): Promise<void> {
  onig ??= oniguruma.loadWASM(fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer as ArrayBuffer);
  return onig;
}

function registry(hosts: 'fixtures' | 'vscode'): Registry {
  return new Registry({
    onigLib: loadOnig().then(() => ({ createOnigScanner: (s: string[]) => new oniguruma.OnigScanner(s), createOnigString: (s: string) => new oniguruma.OnigString(s) })),
    loadGrammar: async (scopeName) => {
      const ours = contributed.find((g) => g.scopeName === scopeName);
      if (ours) return parseRawGrammar(fs.readFileSync(path.join(REPO_ROOT, ours.path), 'utf8'), ours.path);
      if (hosts === 'vscode' && realHosts[scopeName]) {
        const file = path.join(vscodeExtensions, realHosts[scopeName]);
        return parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
      }
      const fixture = fixtureHosts[scopeName];
      return fixture ? parseRawGrammar(JSON.stringify(fixture), `${scopeName}.json`) : null;
    },
    getInjections: (scopeName) => contributed.filter((g) => g.injectTo?.includes(scopeName)).map((g) => g.scopeName),
  });
}

interface Token { text: string; scopes: string[]; line: number }

function tokenize(grammar: IGrammar, text: string): Token[] {
  const out: Token[] = [];
  let state = INITIAL;
  text.split('\n').forEach((line, index) => {
    const result = grammar.tokenizeLine(line, state);
    for (const t of result.tokens) out.push({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes, line: index });
    state = result.ruleStack;
  });
  return out;
}

/** The scopes of the `nth` token whose text (trimmed) is exactly `text`. */
function scopesOf(tokens: Token[], text: string, nth = 0): string[] {
  const found = tokens.filter((t) => t.text.trim() === text)[nth];
  assert.ok(found, `no token "${text}" (#${nth}) in ${JSON.stringify(tokens.map((t) => t.text))}`);
  return found.scopes;
}

function assertScope(tokens: Token[], text: string, scope: string, nth = 0): void {
  const scopes = scopesOf(tokens, text, nth);
  assert.ok(scopes.some((s) => s === scope || s.startsWith(`${scope}.`)), `"${text}" has ${scopes.join(' ')}, expected ${scope}`);
}

function assertNoScope(tokens: Token[], text: string, scope: string, nth = 0): void {
  const scopes = scopesOf(tokens, text, nth);
  assert.ok(!scopes.some((s) => s.startsWith(scope)), `"${text}" has ${scopes.join(' ')}, expected no ${scope}`);
}

const QUERY = [
  '# Tasks of one owner',
  'query TasksOf($owner: String!, $limit: Int = 10) @cached(ttl: 60) {',
  '  tasks(query: { owner: $owner, status_in: ["open", "late\\"r"] }, limit: $limit, sortBy: DUEDATE_ASC) {',
  '    id: _id',
  '    ...TaskFields',
  '    ... on Task { name }',
  '  }',
  '}',
  'fragment TaskFields on Task { priority }',
  'mutation { renameTask(input: { note: """multi', 'line""" }) { name } }',
].join('\n');

const SDL = [
  '"""',
  'A task to do',
  '"""',
  'type Task implements Node & Entity @key(fields: "id") {',
  '  "The name" name: String!',
  '  tags(first: Int = 5): [String]',
  '}',
  'enum Status { OPEN DONE }',
  'scalar ObjectId',
  'schema { query: Query }',
].join('\n');

function grammarSuite(hosts: 'fixtures' | 'vscode'): void {
  let reg: Registry;
  before(() => { reg = registry(hosts); });
  const load = async (scope: string) => {
    const grammar = await reg.loadGrammar(scope);
    assert.ok(grammar, scope);
    return grammar;
  };

  test('a query: comments, operations, variables, types, directives, arguments, values, aliases, fragments, strings', async () => {
    const tokens = tokenize(await load('source.graphql'), QUERY);
    assertScope(tokens, 'Tasks of one owner', 'comment.line.number-sign.graphql');
    assertScope(tokens, 'query', 'keyword.operation.graphql');
    assertScope(tokens, 'TasksOf', 'entity.name.function.operation.graphql');
    assertScope(tokens, 'owner', 'variable.parameter.graphql');
    assertScope(tokens, 'String', 'support.type.builtin.graphql');
    assertScope(tokens, '!', 'keyword.operator.nonnull.graphql');
    assertScope(tokens, '10', 'constant.numeric.graphql');
    assertScope(tokens, 'cached', 'entity.name.function.directive.graphql');
    assertScope(tokens, 'tasks', 'variable.other.field.graphql');
    assertScope(tokens, 'query', 'variable.parameter.argument.graphql', 1);
    assertScope(tokens, 'owner', 'support.type.property-name.graphql', 1);
    assertScope(tokens, 'open', 'string.quoted.double.graphql');
    assertScope(tokens, '\\"', 'constant.character.escape.graphql');
    assertScope(tokens, 'DUEDATE_ASC', 'constant.other.enum.graphql');
    assertScope(tokens, 'id', 'variable.other.alias.graphql');
    assertScope(tokens, '_id', 'variable.other.field.graphql');
    assertScope(tokens, 'TaskFields', 'entity.name.fragment.graphql');
    assertScope(tokens, 'on', 'keyword.on.graphql');
    assertScope(tokens, 'Task', 'support.type.graphql');
    assertScope(tokens, 'fragment', 'keyword.fragment.graphql');
    assertScope(tokens, 'TaskFields', 'entity.name.fragment.graphql', 1);
    assertScope(tokens, 'multi', 'string.quoted.block.graphql');
    assertScope(tokens, 'line', 'string.quoted.block.graphql');
    assertScope(tokens, 'name', 'variable.other.field.graphql', 1);
  });

  test('a schema: descriptions, type definitions, fields, arguments, enums', async () => {
    const tokens = tokenize(await load('source.graphql'), SDL);
    assertScope(tokens, 'A task to do', 'string.quoted.block.description.graphql');
    assertScope(tokens, 'type', 'storage.type.graphql');
    assertScope(tokens, 'Task', 'entity.name.type.graphql');
    assertScope(tokens, 'implements', 'keyword.other.graphql');
    assertScope(tokens, 'Entity', 'support.type.graphql');
    assertScope(tokens, 'key', 'entity.name.function.directive.graphql');
    assertScope(tokens, 'The name', 'string.quoted.double.description.graphql');
    assertScope(tokens, 'name', 'variable.other.field.graphql');
    assertScope(tokens, 'first', 'variable.parameter.argument.graphql');
    assertScope(tokens, '5', 'constant.numeric.graphql');
    assertScope(tokens, 'OPEN', 'constant.other.enum.graphql');
    assertScope(tokens, 'ObjectId', 'entity.name.type.graphql');
  });

  test('GraphQL in TypeScript: tagged templates, calls, /* GraphQL */ strings and substitutions; other templates untouched', async () => {
    const text = [
      'const A = gql`query Alpha { tasks { name } }`;',
      'const B = graphql(`mutation Beta { archive }`);',
      'const C = /* GraphQL */ `',
      '  query Gamma { tasks { ...F } }',
      '  ${FIELDS}',
      '`;',
      'const plain = `query Delta { x }`;',
      'const after = 1;',
    ].join('\n');
    const tokens = tokenize(await load('source.ts'), text);
    for (const [name, nth] of [['Alpha', 0], ['Beta', 0], ['Gamma', 0]] as const) {
      assertScope(tokens, name, 'entity.name.function.operation.graphql', nth);
      assert.ok(scopesOf(tokens, name, nth).includes('meta.embedded.block.graphql'));
    }
    assertScope(tokens, 'tasks', 'variable.other.field.graphql');
    assertScope(tokens, 'F', 'entity.name.fragment.graphql');
    assert.ok(scopesOf(tokens, 'FIELDS').some((s) => s.startsWith('meta.embedded.line.ts')), scopesOf(tokens, 'FIELDS').join(' '));
    assertNoScope(tokens, 'FIELDS', 'variable.other.field.graphql');
    assertNoScope(tokens, 'query Delta { x }', 'meta.embedded.block.graphql');
    assertNoScope(tokens, 'after', 'meta.embedded.block.graphql');
  });

  test('GraphQL in Markdown fenced blocks', async () => {
    const text = ['# Queries', '', '```graphql', 'query Epsilon { tasks { name } }', '```', '', 'query is a word here'].join('\n');
    const tokens = tokenize(await load('text.html.markdown'), text);
    assertScope(tokens, 'Epsilon', 'entity.name.function.operation.graphql');
    assert.ok(scopesOf(tokens, 'Epsilon').includes('meta.embedded.block.graphql'));
    assert.ok(!tokens.filter((t) => t.line === 6).some((t) => t.scopes.some((s) => s.includes('graphql'))));
  });

  test('rule expressions in JSON strings: expansions, operators, query operators', async () => {
    const text = [
      '{ "read": { "%%user.id": "%%partition" },',
      '  "write": { "$or": [{ "owner": "%%user.custom_data.team" }, { "%%true": { "%function": { "name": "canWrite", "arguments": ["%%root", "%%prevRoot.status"] } } }] },',
      '  "filter": { "ownerId": { "%stringToOid": "%%values.adminId" }, "tags": { "$in": ["a"] }, "done": { "$exists": false } },',
      '  "plain": "100%% sure, $5" }',
    ].join('\n');
    const tokens = tokenize(await load('source.json'), text);
    assertScope(tokens, 'user', 'variable.language.expansion.rules');
    assertScope(tokens, '.id', 'variable.other.property.rules');
    assertScope(tokens, 'partition', 'variable.language.expansion.rules');
    assertScope(tokens, 'or', 'keyword.operator.query.rules');
    assertScope(tokens, '.custom_data.team', 'variable.other.property.rules');
    assertScope(tokens, 'true', 'variable.language.expansion.rules');
    assertScope(tokens, 'function', 'support.function.operator.rules');
    assertScope(tokens, 'root', 'variable.language.expansion.rules');
    assertScope(tokens, 'prevRoot', 'variable.language.expansion.rules');
    assertScope(tokens, 'stringToOid', 'support.function.operator.rules');
    assertScope(tokens, 'values', 'variable.language.expansion.rules');
    assertScope(tokens, 'in', 'keyword.operator.query.rules');
    assertScope(tokens, 'exists', 'keyword.operator.query.rules');
    assert.ok(!tokens.filter((t) => t.line === 3).some((t) => t.scopes.some((s) => s.endsWith('.rules'))), 'no rule scopes in plain text');
  });
}

describe('syntaxes/ with stand-in host grammars', () => grammarSuite('fixtures'));
describe('syntaxes/ with VS Code\'s own grammars', { skip: haveRealHosts ? false : 'the editor tests\' VS Code build is not installed (test/editor/setup.sh)' }, () => grammarSuite('vscode'));
