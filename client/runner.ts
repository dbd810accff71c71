// The query runner's editor side: CodeLens above each GraphQL operation (files and JS/TS templates), run at
// the cursor or a selection, the identity pick, variables, a cancellable progress notification, result
// documents beside the query, GraphQL errors as diagnostics, and the history view. The HTTP, identity and
// variable logic is in core/runner/.
import path from 'node:path';
import * as vscode from 'vscode';
import {
  documentPositionToFile, findGraphqlDocuments, graphqlDocumentAt, graphqlHostOf, graphqlOperationAt,
  type EmbeddedGraphqlDocument, type GraphqlOperation,
} from '../core/graphql/embedded';
import { RunnerError, describeIdentity, identityKey, mintCustomJwt, type CredentialHeaders, type Identity } from '../core/runner/identities';
import { listUsers } from '../core/runner/local';
import { missingFragments, operationText } from '../core/runner/operation';
import { curlFor, runGraphql, type GraphqlRequest, type RunResult } from '../core/runner/run';
import { parseVariableInput, variablesFileFor, variablesFromFile, variablesObject } from '../core/runner/variables';
import { customJwtSettings, type AppModels } from './appModels';
import { commands } from './commands';
import { addToHistory, describeHistoryEntry, historyFromState, type HistoryEntry } from './history';
import { resultDocumentText, resultFileName } from './results';
import type { RuntimeController } from './runtimeController';

export const RESULT_SCHEME = 'asl-result';
const HISTORY_KEY = 'appServicesLocal.runner.history';
const LAST_IDENTITY_KEY = 'appServicesLocal.runner.lastIdentity';
const IDENTITIES_SECRET = 'appServicesLocal.runner.identities';
const VARIABLES_KEY = 'appServicesLocal.runner.variables';

/** The result documents of this editor session, by URI path. */
class ResultDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private sequence = 0;

  add(operationName: string | undefined, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: RESULT_SCHEME, path: `/${resultFileName(operationName, ++this.sequence)}` });
    this.texts.set(uri.path, text);
    return uri;
  }

  has(uri: vscode.Uri): boolean { return this.texts.has(uri.path); }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '// This result is no longer kept (results last for one editor session). Run the operation again from the history.';
  }
}

/** Identities used before, by key; those with secrets kept in the editor's secret storage. */
class IdentityStore {
  private known = new Map<string, Identity>();
  private loaded: Promise<void> | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {}

  private load(): Promise<void> {
    this.loaded ??= (async () => {
      try {
        const stored = JSON.parse((await this.context.secrets.get(IDENTITIES_SECRET)) ?? '[]') as Identity[];
        for (const identity of stored) this.known.set(identityKey(identity), identity);
      } catch { /* unreadable storage: start with none */ }
    })();
    return this.loaded;
  }

  async all(): Promise<Identity[]> { await this.load(); return [...this.known.values()]; }
  async get(key: string | undefined): Promise<Identity | undefined> { await this.load(); return key ? this.known.get(key) : undefined; }

  async remember(identity: Identity): Promise<void> {
    await this.load();
    const key = identityKey(identity);
    this.known.delete(key);
    this.known.set(key, identity);
    // The newest twenty: a list to pick from, not an archive.
    const kept = [...this.known.values()].slice(-20);
    this.known = new Map(kept.map((i) => [identityKey(i), i]));
    await this.context.secrets.store(IDENTITIES_SECRET, JSON.stringify(kept));
    await this.context.workspaceState.update(LAST_IDENTITY_KEY, key);
  }

  lastKey(): string | undefined { return this.context.workspaceState.get<string>(LAST_IDENTITY_KEY); }
}

interface Located { editor?: vscode.TextEditor; document: vscode.TextDocument; embedded: EmbeddedGraphqlDocument; operation?: GraphqlOperation }

/** Fragment texts by name for a document, from the other files of its app; none when unknown. */
export type FragmentSource = (documentUri: string, names: string[]) => Promise<string[]>;

export class QueryRunner implements vscode.CodeLensProvider, vscode.TreeDataProvider<HistoryEntry>, vscode.Disposable {
  readonly results = new ResultDocuments();
  private readonly identities: IdentityStore;
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('App Services Runner');
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly historyChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.historyChanged.event;
  private history: HistoryEntry[];
  private lastIdentityLabel: string | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];
  private inFlight: AbortController | undefined;
  /** What a test or a caller awaits: the last run's outcome. */
  lastRun: { result?: RunResult; uri?: vscode.Uri; error?: string } | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly runtime: RuntimeController,
    private readonly apps: AppModels,
    /** The texts of named fragments defined in the workspace's other files (the language server keeps them). */
    private readonly fragmentsFor: FragmentSource = async () => [],
  ) {
    this.identities = new IdentityStore(context);
    this.history = historyFromState(context.workspaceState.get(HISTORY_KEY));
    void this.identities.get(this.identities.lastKey()).then((i) => { this.lastIdentityLabel = i && describeIdentity(i); this.lensesChanged.fire(); });
    this.subscriptions.push(
      this.diagnostics, this.lensesChanged, this.historyChanged,
      vscode.workspace.onDidChangeTextDocument((e) => { if (this.diagnostics.has(e.document.uri) && e.contentChanges.length) this.diagnostics.delete(e.document.uri); }),
      runtime.onDidChange(() => this.lensesChanged.fire()),
    );
  }

  dispose(): void { for (const s of this.subscriptions) s.dispose(); }

  // ---- CodeLens ----

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!graphqlHostOf(document.languageId) && !graphqlHostOf(document.fileName)) return [];
    const lenses: vscode.CodeLens[] = [];
    const runAs = this.lastIdentityLabel ? `▶ Run as ${this.lastIdentityLabel}` : '▶ Run';
    for (const embedded of findGraphqlDocuments(graphqlHostOf(document.languageId) ? document.languageId : document.fileName, document.getText())) {
      for (const operation of embedded.operations) {
        const range = new vscode.Range(operation.nameRange.start.line, operation.nameRange.start.character, operation.nameRange.start.line, operation.nameRange.start.character);
        const args = [document.uri, operation.start];
        lenses.push(
          new vscode.CodeLens(range, { title: runAs, command: commands.runOperation.id, arguments: args, tooltip: `Run ${operation.kind} ${operation.name ?? ''} against the local runtime` }),
          new vscode.CodeLens(range, { title: 'Run as…', command: commands.runOperationAs.id, arguments: args, tooltip: 'Pick who the operation runs as' }),
        );
      }
    }
    return lenses;
  }

  // ---- finding the operation ----

  private async locate(uri: vscode.Uri | undefined, offset: number | undefined): Promise<Located | undefined> {
    const editor = vscode.window.activeTextEditor;
    const document = uri ? await vscode.workspace.openTextDocument(uri) : editor?.document;
    if (!document) {
      void vscode.window.showErrorMessage('App Services: open a .graphql file (or a JS/TS file with a gql template) and put the cursor in an operation to run it.');
      return undefined;
    }
    const at = offset ?? (editor && editor.document === document ? document.offsetAt(editor.selection.active) : 0);
    const kind = graphqlHostOf(document.languageId) ? document.languageId : document.fileName;
    const documents = findGraphqlDocuments(kind, document.getText());
    const embedded = graphqlDocumentAt(documents, at) ?? (documents.length === 1 ? documents[0] : undefined);
    if (!embedded) {
      void vscode.window.showErrorMessage(`App Services: no GraphQL operation at the cursor in ${path.basename(document.fileName)}.`);
      return undefined;
    }
    let operation = graphqlOperationAt(embedded, at);
    if (!operation && embedded.operations.length === 1) operation = embedded.operations[0];
    if (!operation && embedded.operations.length > 1) {
      const picked = await vscode.window.showQuickPick(embedded.operations.map((o) => ({ label: o.name ?? `anonymous ${o.kind}`, description: o.kind, operation: o })), { title: 'Which operation?' });
      if (!picked) return undefined;
      operation = picked.operation;
    }
    if (!operation) {
      const why = embedded.syntaxError ? `it does not parse: ${embedded.syntaxError.message}` : 'it holds no operation';
      void vscode.window.showErrorMessage(`App Services: cannot run this GraphQL document: ${why}.`);
      return undefined;
    }
    return { editor, document, embedded, operation };
  }

  // ---- commands ----

  async runOperation(uri?: vscode.Uri, offset?: number, pickIdentity = false): Promise<RunResult | undefined> {
    const located = await this.locate(uri, offset);
    if (!located?.operation) return undefined;
    const target = await this.runtime.ensureRunning();
    if (!target) return undefined;
    const identity = pickIdentity ? await this.pickIdentity() : (await this.identities.get(this.identities.lastKey())) ?? await this.pickIdentity();
    if (!identity) return undefined;
    const variables = await this.variablesFor(located.document, located.operation, target.appDir);
    if (variables === null) return undefined;
    const missing = missingFragments(located.embedded, located.operation);
    const otherFiles = missing.length ? await this.fragmentsFor(located.document.uri.toString(), missing) : [];
    const query = operationText(located.embedded, located.operation, otherFiles);
    const request: GraphqlRequest = { query, operationName: located.operation.name, ...(variables ? { variables } : {}) };
    return this.execute(request, identity, located.operation.kind, located);
  }

  async runSelection(): Promise<RunResult | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showErrorMessage('App Services: select the GraphQL text to run first.');
      return undefined;
    }
    const target = await this.runtime.ensureRunning();
    if (!target) return undefined;
    const identity = (await this.identities.get(this.identities.lastKey())) ?? await this.pickIdentity();
    if (!identity) return undefined;
    return this.execute({ query: editor.document.getText(editor.selection) }, identity, 'selection', undefined);
  }

  async rerun(entry: HistoryEntry): Promise<RunResult | undefined> {
    const identity = await this.identities.get(entry.identityKey);
    if (!identity) {
      void vscode.window.showErrorMessage(`App Services: the identity ${entry.identityLabel} is no longer known; run the operation again with "Run as…".`);
      return undefined;
    }
    if (!await this.runtime.ensureRunning()) return undefined;
    return this.execute({ query: entry.query, operationName: entry.operationName, variables: entry.variables }, identity, entry.operationKind, undefined, entry.source);
  }

  async openResult(entry: HistoryEntry): Promise<void> {
    if (entry.resultUri && this.results.has(vscode.Uri.parse(entry.resultUri))) {
      await vscode.window.showTextDocument(vscode.Uri.parse(entry.resultUri), { viewColumn: vscode.ViewColumn.Beside, preview: false });
    } else {
      void vscode.window.showInformationMessage('App Services: that result is from an earlier editor session; run it again to see it.', 'Run Again').then((c) => { if (c) void this.rerun(entry); });
    }
  }

  async copyAsCurl(entry: HistoryEntry): Promise<void> {
    const identity = await this.identities.get(entry.identityKey);
    const pool = this.runtime.sessions;
    if (!identity || !pool) {
      void vscode.window.showErrorMessage(identity ? 'App Services: start the runtime first; the curl command carries a token from it.' : `App Services: the identity ${entry.identityLabel} is no longer known.`);
      return;
    }
    try {
      await vscode.env.clipboard.writeText(await curlFor(pool, identity, { query: entry.query, operationName: entry.operationName, variables: entry.variables }));
      void vscode.window.showInformationMessage('App Services: the curl command is on the clipboard (it holds a live token).');
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not build the curl command: ${messageOf(error)}`);
    }
  }

  /** Cancels the run in progress, as its notification's Cancel button does. */
  cancelRunning(): boolean {
    if (!this.inFlight) return false;
    this.inFlight.abort();
    return true;
  }

  async clearHistory(): Promise<void> {
    this.history = [];
    await this.context.workspaceState.update(HISTORY_KEY, this.history);
    this.historyChanged.fire();
  }

  private async execute(request: GraphqlRequest, identity: Identity, kind: string, located: Located | undefined, source?: string): Promise<RunResult | undefined> {
    const pool = this.runtime.sessions;
    if (!pool) return undefined;
    await this.identities.remember(identity);
    this.lastIdentityLabel = describeIdentity(identity);
    this.lensesChanged.fire();
    const timeoutSeconds = vscode.workspace.getConfiguration('appServicesLocal.runner').get<number>('timeoutSeconds', 60);
    const label = `${kind} ${request.operationName ?? ''}`.trim();
    const entry: HistoryEntry = {
      id: `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, at: Date.now(), operationName: request.operationName, operationKind: kind,
      identityLabel: describeIdentity(identity), identityKey: identityKey(identity), errorCount: 0, query: request.query, variables: request.variables,
      source: source ?? located?.document.uri.toString(),
    };
    let result: RunResult | undefined;
    try {
      result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `App Services: running ${label} as ${entry.identityLabel}`, cancellable: true }, (_progress, token) => {
        const controller = new AbortController();
        this.inFlight = controller;
        token.onCancellationRequested(() => controller.abort());
        return runGraphql(pool, identity, request, { signal: controller.signal, timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : 0 });
      });
    } catch (error) {
      this.inFlight = undefined;
      const message = messageOf(error);
      entry.failure = message;
      this.lastRun = { error: message };
      this.record(entry);
      if (message !== 'cancelled') void vscode.window.showErrorMessage(`App Services: ${label} as ${entry.identityLabel} failed: ${message}`);
      return undefined;
    }
    this.inFlight = undefined;
    const uri = this.results.add(request.operationName, resultDocumentText(result, label, new Date(entry.at)));
    entry.status = result.status;
    entry.errorCount = result.errors.length;
    entry.timeMs = result.timeMs;
    entry.resultUri = uri.toString();
    this.record(entry);
    if (located) this.publishErrors(located, result);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: false });
    this.lastRun = { result, uri };
    return result;
  }

  private record(entry: HistoryEntry): void {
    const cap = vscode.workspace.getConfiguration('appServicesLocal.runner').get<number>('historySize', 50);
    this.history = addToHistory(this.history, entry, cap);
    void this.context.workspaceState.update(HISTORY_KEY, this.history.map((e) => ({ ...e, resultUri: undefined })));
    this.historyChanged.fire();
  }

  /** GraphQL errors with locations become diagnostics on the operation's file, mapped through the embedding. */
  private publishErrors(located: Located, result: RunResult): void {
    const items: vscode.Diagnostic[] = [];
    for (const error of result.errors) {
      const locations = error.locations?.length ? error.locations : undefined;
      if (!locations) continue;
      for (const location of locations) {
        const at = documentPositionToFile(located.embedded, { line: location.line - 1, character: location.column - 1 });
        const line = located.document.lineAt(Math.min(at.line, located.document.lineCount - 1));
        const word = located.document.getWordRangeAtPosition(new vscode.Position(line.lineNumber, at.character), /[_A-Za-z][_0-9A-Za-z]*/);
        const range = word ?? new vscode.Range(line.lineNumber, at.character, line.lineNumber, Math.min(at.character + 1, line.text.length));
        const diagnostic = new vscode.Diagnostic(range, error.message, vscode.DiagnosticSeverity.Error);
        diagnostic.source = 'App Services runner';
        items.push(diagnostic);
      }
    }
    this.diagnostics.set(located.document.uri, items);
  }

  // ---- variables ----

  /** The variables for a run; undefined when there are none, null when the user cancelled or the file is wrong. */
  private async variablesFor(document: vscode.TextDocument, operation: GraphqlOperation, appDir: string | undefined): Promise<Record<string, unknown> | undefined | null> {
    if (operation.variables.length === 0) return undefined;
    const schema = appDir ? await this.apps.schema(appDir).catch(() => undefined) : undefined;
    if (document.uri.scheme === 'file') {
      const file = vscode.Uri.file(variablesFileFor(document.uri.fsPath));
      const bytes = await vscode.workspace.fs.readFile(file).then((b) => b, () => undefined);
      if (bytes) {
        const fromFile = variablesFromFile(new TextDecoder().decode(bytes), operation.name, operation.variables, schema);
        if (fromFile?.ok) return fromFile.variables;
        if (fromFile && !fromFile.ok) {
          void vscode.window.showErrorMessage(`App Services: ${path.basename(file.fsPath)}: ${fromFile.message}`);
          return null;
        }
      }
    }
    const memoryKey = `${document.uri.toString()}#${operation.name ?? ''}`;
    const remembered = this.context.workspaceState.get<Record<string, Record<string, string>>>(VARIABLES_KEY, {});
    const last = remembered[memoryKey] ?? {};
    const typed: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    for (const declaration of operation.variables) {
      const input = await vscode.window.showInputBox({
        title: `${operation.name ?? 'Operation'}: $${declaration.name}`,
        prompt: `$${declaration.name}: ${declaration.type}${declaration.defaultValue ? ` (default ${declaration.defaultValue}; leave empty for it)` : declaration.required ? '' : ' (leave empty to omit)'}. JSON, or a bare word for a string.`,
        value: last[declaration.name] ?? '',
        ignoreFocusOut: true,
        validateInput: (text) => {
          const parsed = parseVariableInput(declaration, text, schema);
          return parsed.ok ? undefined : parsed.message;
        },
      });
      if (input === undefined) return null;
      const parsed = parseVariableInput(declaration, input, schema);
      if (!parsed.ok) return null;
      typed[declaration.name] = input;
      values[declaration.name] = parsed.value;
    }
    await this.context.workspaceState.update(VARIABLES_KEY, { ...remembered, [memoryKey]: typed });
    return variablesObject(values);
  }

  // ---- identities ----

  async pickIdentity(): Promise<Identity | undefined> {
    const target = this.runtime.target;
    const recent = (await this.identities.all()).reverse();
    type Item = vscode.QuickPickItem & { pick: () => Promise<Identity | undefined> };
    const items: Item[] = [
      ...recent.map((identity): Item => ({ label: describeIdentity(identity), description: 'used before', pick: async () => identity })),
      ...(recent.length ? [{ label: '', kind: vscode.QuickPickItemKind.Separator, pick: async () => undefined }] : []),
      { label: '$(person) Existing user…', description: 'a user of the app, without their password (admin)', pick: () => this.pickExistingUser() },
      { label: '$(person-add) New email/password user…', description: 'registered now', pick: () => this.newUser() },
      { label: '$(mail) Email/password…', description: 'log in with a known user', pick: () => this.emailPassword() },
      { label: '$(question) Anonymous', description: 'when the anon-user provider is enabled', pick: async () => ({ kind: 'anonymous' }) },
      { label: '$(key) API key…', pick: () => this.apiKey() },
      { label: '$(shield) Custom JWT…', description: 'paste a token, or mint one with the provider key', pick: () => this.customJwt() },
      { label: '$(list-flat) Credential headers…', description: 'email/password, apiKey or jwtTokenString headers, no session', pick: () => this.credentialHeaders() },
      { label: '$(warning) System', description: 'rules bypassed (admin)', detail: target?.admin ? undefined : 'Needs a runtime started by the editor', pick: async () => ({ kind: 'system' }) },
    ];
    const picked = await vscode.window.showQuickPick(items, { title: 'Run as…', placeHolder: 'Who should the operation run as?', matchOnDescription: true });
    return picked?.pick();
  }

  async pickExistingUser(): Promise<Identity | undefined> {
    const pool = this.runtime.sessions;
    if (!pool) return undefined;
    try {
      const users = await listUsers(pool);
      if (users.length === 0) {
        void vscode.window.showInformationMessage('App Services: the app has no users yet. Create one with "New email/password user…".');
        return undefined;
      }
      const picked = await vscode.window.showQuickPick(users.map((u) => ({
        label: u.email ?? u.name ?? u.id, description: u.providers.join(', '), detail: u.id, user: u,
      })), { title: 'Run as an existing user', matchOnDescription: true, matchOnDetail: true });
      return picked ? { kind: 'existing-user', userId: picked.user.id, label: picked.label } : undefined;
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not list the app's users: ${messageOf(error)}`);
      return undefined;
    }
  }

  private async askEmailPassword(title: string): Promise<{ email: string; password: string } | undefined> {
    const email = await vscode.window.showInputBox({ title, prompt: 'Email', ignoreFocusOut: true, validateInput: (v) => (/^\S+@\S+$/.test(v) ? undefined : 'an email address, like ada@example.com') });
    if (!email) return undefined;
    const password = await vscode.window.showInputBox({ title, prompt: `Password for ${email}`, password: true, ignoreFocusOut: true, validateInput: (v) => (v.length >= 6 ? undefined : 'at least 6 characters') });
    return password ? { email, password } : undefined;
  }

  async newUser(credentials?: { email: string; password: string }): Promise<Identity | undefined> {
    const pool = this.runtime.sessions;
    const given = credentials ?? await this.askEmailPassword('New email/password user');
    if (!pool || !given) return undefined;
    try {
      await pool.registerEmailPasswordUser(given.email, given.password);
    } catch (error) {
      void vscode.window.showErrorMessage(`App Services: could not register ${given.email}: ${messageOf(error)}`);
      return undefined;
    }
    return { kind: 'email-password', ...given };
  }

  private async emailPassword(): Promise<Identity | undefined> {
    const given = await this.askEmailPassword('Email/password user');
    return given && { kind: 'email-password', ...given };
  }

  private async apiKey(): Promise<Identity | undefined> {
    const key = await vscode.window.showInputBox({ title: 'API key', prompt: 'The API key (server key or a user\'s key)', password: true, ignoreFocusOut: true });
    return key ? { kind: 'api-key', key } : undefined;
  }

  private async customJwt(): Promise<Identity | undefined> {
    const how = await vscode.window.showQuickPick([
      { label: 'Mint a token for testing', description: 'signed with the custom JWT provider\'s HS256 key', mint: true },
      { label: 'Paste a token', mint: false },
    ], { title: 'Custom JWT' });
    if (!how) return undefined;
    if (!how.mint) {
      const token = await vscode.window.showInputBox({ title: 'Custom JWT', prompt: 'The JWT (header.payload.signature)', ignoreFocusOut: true, validateInput: (v) => (v.split('.').length === 3 ? undefined : 'a JWT has three parts separated by dots') });
      return token ? { kind: 'custom-jwt', token: token.trim() } : undefined;
    }
    const target = this.runtime.target;
    const appDir = target?.appDir ?? await this.runtime.chooseApp();
    if (!appDir || !target) return undefined;
    const secrets = vscode.workspace.getConfiguration('appServicesLocal.runtime').get<string[]>('secrets', []);
    const settings = customJwtSettings(await this.apps.get(appDir), target.appId, secrets);
    if (!settings) { void vscode.window.showErrorMessage('App Services: the app has no custom JWT provider (custom-token) in auth/providers.json.'); return undefined; }
    if (settings.algorithm !== 'HS256') { void vscode.window.showErrorMessage(`App Services: the custom JWT provider signs with ${settings.algorithm}; only HS256 tokens can be minted here. Paste a token instead.`); return undefined; }
    if (!settings.key) {
      void vscode.window.showErrorMessage(`App Services: no value for the signing key secret "${settings.keyName ?? '(none configured)'}": add it to secrets.json at the app root or to the setting appServicesLocal.runtime.secrets as NAME=VALUE.`);
      return undefined;
    }
    const sub = await vscode.window.showInputBox({ title: 'Custom JWT: subject', prompt: 'sub: the user id in your identity system', value: 'test-user-1', ignoreFocusOut: true, validateInput: (v) => (v.trim() ? undefined : 'sub cannot be empty') });
    if (!sub) return undefined;
    const audText = await vscode.window.showInputBox({ title: 'Custom JWT: audience', prompt: 'aud (comma-separated for several)', value: Array.isArray(settings.audience) ? settings.audience.join(',') : settings.audience, ignoreFocusOut: true });
    if (audText === undefined) return undefined;
    const claimsText = await vscode.window.showInputBox({
      title: 'Custom JWT: extra claims', prompt: 'A JSON object of claims (the provider\'s metadata fields, e.g. {"name": "Ada"})', value: '{"name": "Test User"}', ignoreFocusOut: true,
      validateInput: (v) => { try { const x = JSON.parse(v || '{}'); return typeof x === 'object' && x && !Array.isArray(x) ? undefined : 'a JSON object'; } catch (e) { return `not JSON: ${(e as Error).message}`; } },
    });
    if (claimsText === undefined) return undefined;
    const aud = audText.split(',').map((a) => a.trim()).filter(Boolean);
    const token = await mintCustomJwt({ key: settings.key, sub: sub.trim(), aud: aud.length === 1 ? aud[0]! : aud, claims: JSON.parse(claimsText || '{}') as Record<string, unknown> });
    return { kind: 'custom-jwt', token, sub: sub.trim() };
  }

  private async credentialHeaders(): Promise<Identity | undefined> {
    const kind = await vscode.window.showQuickPick(['email and password', 'apiKey', 'jwtTokenString'], { title: 'Credential headers' });
    if (!kind) return undefined;
    let headers: CredentialHeaders | undefined;
    if (kind === 'email and password') {
      const given = await this.askEmailPassword('Credential headers: email and password');
      headers = given && { email: given.email, password: given.password };
    } else {
      const value = await vscode.window.showInputBox({ title: `Credential header ${kind}`, password: true, ignoreFocusOut: true });
      headers = value ? (kind === 'apiKey' ? { apiKey: value } : { jwtTokenString: value }) : undefined;
    }
    return headers && { kind: 'credential-headers', headers };
  }

  /** Sets the identity used by "▶ Run as …" (tests and the explorer use it). */
  async useIdentity(identity: Identity): Promise<void> {
    await this.identities.remember(identity);
    this.lastIdentityLabel = describeIdentity(identity);
    this.lensesChanged.fire();
  }

  async identityFor(key: string): Promise<Identity | undefined> { return this.identities.get(key); }
  async lastIdentity(): Promise<Identity | undefined> { return this.identities.get(this.identities.lastKey()); }

  // ---- history view ----

  getTreeItem(entry: HistoryEntry): vscode.TreeItem {
    const view = describeHistoryEntry(entry);
    const item = new vscode.TreeItem(view.label);
    item.description = view.description;
    item.tooltip = view.tooltip;
    item.contextValue = 'historyEntry';
    item.iconPath = new vscode.ThemeIcon(view.failed ? 'error' : 'pass');
    item.command = { title: 'Open Result', command: commands.openHistoryResult.id, arguments: [entry] };
    return item;
  }

  getChildren(entry?: HistoryEntry): HistoryEntry[] {
    return entry ? [] : this.history;
  }

  get entries(): readonly HistoryEntry[] { return this.history; }
}

export function messageOf(error: unknown): string {
  if (error instanceof RunnerError) return error.message;
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' && error ? error : 'an unknown error';
}
