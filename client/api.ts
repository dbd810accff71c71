// What `activate()` returns to other extensions and to the editor tests. No `vscode` imports.

export interface AppServicesLocalApi {
  /** Resolves once the language client has started (the server answered `initialize`); rejects if it cannot start. */
  ready: Promise<void>;
}
