// The local platform's public surface: start a runtime for an app directory.
export { AppHasErrors, deriveAppId, startRuntime, type RunningRuntime, type RuntimeOptions } from './runtime';
