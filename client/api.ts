// What `activate()` returns to other extensions and to the editor tests. No `vscode` imports.
import type { Features } from './features';

export interface AppServicesLocalApi {
  /** Resolves once the language client has started (the server answered `initialize`); rejects if it cannot start. */
  ready: Promise<void>;
  /** Milliseconds spent evaluating dist/extension.js plus the `activate()` call itself. */
  activationMs: number;
  /** Runtime control, the query runner and the app explorer (loaded on first call). */
  features(): Features;
}
