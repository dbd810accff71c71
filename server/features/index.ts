// The language features behind the LSP requests: finds the app and the current text of the document,
// then calls the pure feature functions. Every request is guarded: a failure is logged and answered empty.
import path from 'node:path';
import type {
  CodeAction, CodeActionParams, CompletionList, CompletionParams, DefinitionParams, Diagnostic, DocumentSymbol, DocumentSymbolParams,
  Hover, HoverParams, Location,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { visit } from 'graphql';
import { isObject, JsonFile, TextFile } from '../../core/json';
import type { GraphqlAppReason, GraphqlAppResult, GraphqlFragmentsParams, GraphqlFragmentsResult, GraphqlSettings } from '../../core/protocol';
import { embeddedRqlProblems } from '../../core/rql/embedded';
import { DIAGNOSTIC_SOURCE, uriToPath } from '../convert';
import type { LoadedApp } from '../workspace';
import { codeActions } from './codeActions';
import { completion } from './completion';
import {
  GraphqlDocuments, graphqlCompletion, graphqlDefinition, graphqlDiagnostics, graphqlHover, graphqlSymbols, holdsGraphql,
} from './graphql';
import type { WorkspaceFragment, WorkspaceFragments } from './graphqlFragments';
import { hover } from './hover';
import { indexOf } from './appIndex';

export interface FeatureSettings {
  /**
   * Offer the bundled JSON Schemas' keys, enum values and descriptions. Editors that already apply those
   * schemas to the files (VS Code through `jsonValidation`) turn this off to avoid showing everything twice.
   */
  schemaDocumentation: boolean;
}

/** The app whose schema applies to GraphQL in a file, and why (see AppWorkspace.graphqlAppOf). */
export type GraphqlAppLookup = (absPath: string, preferred?: string) => { app: LoadedApp; reason: GraphqlAppReason } | undefined;

/** JavaScript and TypeScript sources, where Realm JS code writes RQL queries. */
const SCRIPT_FILE = /\.[cm]?[jt]sx?$/i;

export class LanguageFeatures {
  private settings: FeatureSettings = { schemaDocumentation: true };
  private graphqlSettings: GraphqlSettings = { enable: true };
  private readonly graphqlDocuments: GraphqlDocuments;
  /** The last parsed text per document, so hover after completion on the same version does not parse again. */
  private readonly parsed = new Map<string, JsonFile | TextFile>();

  constructor(
    /** The loaded app that owns a file (the workspace is replaced during initialisation, so it is looked up each time). */
    private readonly appOf: (absPath: string) => LoadedApp | undefined,
    /** The editor's current text of a document, when it is open. */
    private readonly openText: (uri: string) => string | undefined,
    private readonly log: (message: string) => void,
    private readonly graphqlAppOf: GraphqlAppLookup = (file) => {
      const app = appOf(file);
      return app && { app, reason: 'folder' };
    },
    private readonly appChoices: () => LoadedApp[] = () => [],
    /** Fragments of the workspace's other files, when the server keeps them. */
    private readonly workspaceFragments?: WorkspaceFragments,
  ) {
    this.graphqlDocuments = workspaceFragments?.documents ?? new GraphqlDocuments();
  }

  /** Reads `initializationOptions.schemaDocumentation` (boolean) and `initializationOptions.graphql` (GraphqlSettings). */
  configure(initializationOptions: unknown): void {
    if (isObject(initializationOptions) && typeof initializationOptions.schemaDocumentation === 'boolean') {
      this.settings = { ...this.settings, schemaDocumentation: initializationOptions.schemaDocumentation };
    }
    if (isObject(initializationOptions)) this.configureGraphql(initializationOptions.graphql);
  }

  /** `appServicesLocal.graphql` settings: `{ enable?: boolean, app?: string }`; anything else leaves them as they are. */
  configureGraphql(settings: unknown): void {
    if (!isObject(settings)) return;
    if (typeof settings.enable === 'boolean') this.graphqlSettings = { ...this.graphqlSettings, enable: settings.enable };
    if (typeof settings.app === 'string') this.graphqlSettings = { ...this.graphqlSettings, app: settings.app.trim() || undefined };
  }

  /** Whether the server checks GraphQL in this document (a GraphQL or script file, features on). */
  servesGraphql(uri: string): boolean {
    const absPath = uriToPath(uri);
    return this.graphqlSettings.enable && !!absPath && holdsGraphql(absPath);
  }

  /** GraphQL diagnostics of an open document; undefined when it has no GraphQL we check (then none are published). */
  graphqlDiagnostics(uri: string): Diagnostic[] | undefined {
    return this.guardGraphql('GraphQL diagnostics', uri, undefined, ({ documents, app, fragments }) => app ? graphqlDiagnostics(indexOf(app.app).generated.schema, documents, fragments()) : undefined);
  }

  /** Syntax errors of the Realm Query Language strings (`.filtered("…")`) of an open JS/TS document. */
  rqlDiagnostics(uri: string): Diagnostic[] {
    const absPath = uriToPath(uri);
    const text = this.openText(uri);
    if (!absPath || text === undefined || !SCRIPT_FILE.test(absPath)) return [];
    try {
      const problems = embeddedRqlProblems(text);
      if (problems.length === 0) return [];
      const document = TextDocument.create(uri, 'javascript', 0, text);
      return problems.map((p) => ({
        range: { start: document.positionAt(p.start), end: document.positionAt(p.end) },
        severity: 1, code: 'rql/syntax', source: DIAGNOSTIC_SOURCE, message: p.message,
      }));
    } catch (e) {
      this.log(`RQL diagnostics failed: ${(e as Error)?.stack ?? e}`);
      return [];
    }
  }

  graphqlApp(uri: string): GraphqlAppResult {
    const absPath = uriToPath(uri);
    const found = absPath ? this.graphqlAppOf(absPath, this.graphqlSettings.app) : undefined;
    return {
      enabled: this.graphqlSettings.enable,
      choices: this.appChoices().map((a) => ({ root: a.model.rootDir, name: a.model.name })),
      ...(found ? { app: { root: found.app.model.rootDir, name: found.app.model.name, reason: found.reason } } : {}),
    };
  }

  /** The named fragments (and those they spread) from the other files of the document's app, for the query runner. */
  graphqlFragments(params: GraphqlFragmentsParams): GraphqlFragmentsResult {
    if (typeof params?.uri !== 'string' || !Array.isArray(params.names)) return { fragments: [] };
    return this.guardGraphql('GraphQL fragments', params.uri, { fragments: [] }, ({ documents, fragments }) => {
      const own = new Set(documents.flatMap((d) => d.fragments.map((f) => f.name)));
      return { fragments: fragmentsSpread(fragments(), params.names.filter((name): name is string => typeof name === 'string'), own) };
    });
  }

  forgetDocument(uri: string): void {
    const absPath = uriToPath(uri);
    if (absPath) this.graphqlDocuments.forget(absPath);
    this.parsed.delete(uri);
  }

  completion(params: CompletionParams): CompletionList | null {
    const inGraphql = this.guardGraphql('GraphQL completion', params.textDocument.uri, null, ({ documents, app, fragments }) => app ? graphqlCompletion(indexOf(app.app).generated.schema, documents, params.position, fragments()) : null);
    if (inGraphql) return { isIncomplete: false, items: inGraphql };
    return this.guard('completion', params.textDocument.uri, null, (app, file) => completion(app, file, params.position, this.settings));
  }

  hover(params: HoverParams): Hover | null {
    const inGraphql = this.guardGraphql('GraphQL hover', params.textDocument.uri, null, ({ documents, app }) => app ? graphqlHover(app.app, documents, params.position) : null);
    if (inGraphql) return inGraphql;
    return this.guard('hover', params.textDocument.uri, null, (app, file) => hover(app, file, params.position, this.settings));
  }

  definition(params: DefinitionParams): Location[] | null {
    return this.guardGraphql('GraphQL definition', params.textDocument.uri, null, ({ documents, app, fragments }) => graphqlDefinition(app?.app, documents, params.position, params.textDocument.uri, fragments()));
  }

  documentSymbols(params: DocumentSymbolParams): DocumentSymbol[] | null {
    return this.guardGraphql('GraphQL symbols', params.textDocument.uri, null, ({ documents }) => graphqlSymbols(documents));
  }

  codeActions(params: CodeActionParams): CodeAction[] {
    return this.guard('code actions', params.textDocument.uri, [], (app, file) => codeActions(app, file, params.context.diagnostics));
  }

  private guardGraphql<T>(what: string, uri: string, empty: T,
    run: (found: { documents: ReturnType<GraphqlDocuments['of']>; app: ReturnType<GraphqlAppLookup>; fragments: () => WorkspaceFragment[] }) => T): T {
    try {
      if (!this.servesGraphql(uri)) return empty;
      const absPath = uriToPath(uri)!;
      const text = this.openText(uri);
      if (text === undefined) return empty;
      const documents = this.graphqlDocuments.of(absPath, text);
      if (!documents.length) return empty;
      const app = this.graphqlAppOf(absPath, this.graphqlSettings.app);
      // Fragments of the other files whose GraphQL is checked against the same app.
      const fragments = () => app && this.workspaceFragments
        ? this.workspaceFragments.others(absPath, (other) => this.graphqlAppOf(other, this.graphqlSettings.app)?.app === app.app)
        : [];
      return run({ documents, app, fragments });
    } catch (e) {
      this.log(`${what} failed for ${uri}: ${(e as Error)?.stack ?? e}`);
      return empty;
    }
  }

  private guard<T>(what: string, uri: string, empty: T, run: (app: LoadedApp | undefined, file: JsonFile | TextFile) => T): T {
    try {
      const located = this.locate(uri);
      return located ? run(located.app, located.file) : empty;
    } catch (e) {
      this.log(`${what} failed for ${uri}: ${(e as Error)?.stack ?? e}`);
      return empty;
    }
  }

  private locate(uri: string): { app: LoadedApp | undefined; file: JsonFile | TextFile } | undefined {
    const absPath = uriToPath(uri);
    if (!absPath) return undefined;
    const app = this.appOf(absPath);
    const text = this.openText(uri) ?? app?.model.files.get(absPath)?.text;
    if (text === undefined) return undefined;
    const cached = this.parsed.get(uri);
    if (cached && cached.text === text) return { app, file: cached };
    const relPath = app ? path.relative(app.model.rootDir, absPath).split(path.sep).join('/') : path.basename(absPath);
    const loaded = app?.model.files.get(absPath);
    const file = loaded && loaded.text === text && loaded.relPath === relPath ? loaded
      : absPath.endsWith('.json') ? new JsonFile(absPath, relPath, text) : new TextFile(absPath, relPath, text);
    this.parsed.set(uri, file);
    return { app, file };
  }
}

/** The named fragments and, transitively, those they spread that `defined` does not hold; the first of a name wins. */
function fragmentsSpread(available: WorkspaceFragment[], names: string[], defined: Set<string>): GraphqlFragmentsResult['fragments'] {
  const byName = new Map<string, WorkspaceFragment>();
  for (const fragment of available) if (!byName.has(fragment.node.name.value)) byName.set(fragment.node.name.value, fragment);
  const out: GraphqlFragmentsResult['fragments'] = [];
  const seen = new Set(defined);
  const pending = [...names];
  while (pending.length) {
    const name = pending.shift()!;
    const fragment = byName.get(name);
    if (seen.has(name) || !fragment?.node.loc) continue;
    seen.add(name);
    const { loc } = fragment.node;
    out.push({ name, file: fragment.file, text: loc.source.body.slice(loc.start, loc.end) });
    visit(fragment.node, { FragmentSpread(spread) { pending.push(spread.name.value); } });
  }
  return out;
}
