// The language features behind the LSP requests: finds the app and the current text of the document,
// then calls the pure feature functions. Every request is guarded: a failure is logged and answered empty.
import path from 'node:path';
import type { CodeAction, CodeActionParams, CompletionList, CompletionParams, Hover, HoverParams } from 'vscode-languageserver';
import { isObject, JsonFile, TextFile } from '../../core/json';
import { uriToPath } from '../convert';
import type { LoadedApp } from '../workspace';
import { codeActions } from './codeActions';
import { completion } from './completion';
import { hover } from './hover';

export interface FeatureSettings {
  /**
   * Offer the bundled JSON Schemas' keys, enum values and descriptions. Editors that already apply those
   * schemas to the files (VS Code through `jsonValidation`) turn this off to avoid showing everything twice.
   */
  schemaDocumentation: boolean;
}

export class LanguageFeatures {
  private settings: FeatureSettings = { schemaDocumentation: true };
  /** The last parsed text per document, so hover after completion on the same version does not parse again. */
  private readonly parsed = new Map<string, JsonFile | TextFile>();

  constructor(
    /** The loaded app that owns a file (the workspace is replaced during initialisation, so it is looked up each time). */
    private readonly appOf: (absPath: string) => LoadedApp | undefined,
    /** The editor's current text of a document, when it is open. */
    private readonly openText: (uri: string) => string | undefined,
    private readonly log: (message: string) => void,
  ) {}

  /** Reads `initializationOptions.schemaDocumentation` (boolean). */
  configure(initializationOptions: unknown): void {
    if (isObject(initializationOptions) && typeof initializationOptions.schemaDocumentation === 'boolean') {
      this.settings = { ...this.settings, schemaDocumentation: initializationOptions.schemaDocumentation };
    }
  }

  completion(params: CompletionParams): CompletionList | null {
    return this.guard('completion', params.textDocument.uri, null, (app, file) => completion(app, file, params.position, this.settings));
  }

  hover(params: HoverParams): Hover | null {
    return this.guard('hover', params.textDocument.uri, null, (app, file) => hover(app, file, params.position, this.settings));
  }

  codeActions(params: CodeActionParams): CodeAction[] {
    return this.guard('code actions', params.textDocument.uri, [], (app, file) => codeActions(app, file, params.context.diagnostics));
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
