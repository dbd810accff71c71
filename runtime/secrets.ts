// Secret values for the local runtime (issue 5 item 6). Exports carry secret names only; values come from
// `secrets.json` at the app root (name → value) and from `asl serve --secret NAME=VALUE`, the flags winning.
// A secret someone needs and nobody supplied is an error that names the secret and how to supply it.
import type { AppModel } from '../core/model';
import type { Diagnostic } from '../core/diagnostics';
import { DiagnosticSink } from '../core/diagnostics';
import type { JsonFile } from '../core/json';
import { isObject } from '../core/json';
import { secretEntries } from '../core/secrets';

export class MissingSecretError extends Error {
  constructor(readonly secretName: string, readonly neededBy: string) {
    super(`secret '${secretName}' needed by ${neededBy} has no value: add "${secretName}": "<value>" to secrets.json at the app root, or pass --secret ${secretName}=<value> to asl serve`);
    this.name = 'MissingSecretError';
  }
}

export interface SecretStore {
  has(name: string): boolean;
  /** The secret's value; throws MissingSecretError naming the secret and who needs it. */
  resolve(name: string, neededBy: string): string;
  readonly names: readonly string[];
}

export interface SecretSources {
  /** The app's `secrets.json` as loaded (`AppModel.secretsFile`). */
  file?: JsonFile;
  /** `NAME=VALUE` strings from `--secret` flags. */
  flags?: readonly string[];
}

export function parseSecretFlag(flag: string): { name: string; value: string } {
  const eq = flag.indexOf('=');
  if (eq <= 0) throw new Error(`--secret expects NAME=VALUE, got '${flag}'`);
  return { name: flag.slice(0, eq), value: flag.slice(eq + 1) };
}

/** Builds the store; problems in `secrets.json` (not an object, non-string values) are returned as diagnostics. */
export function loadSecrets(sources: SecretSources): { store: SecretStore; diagnostics: Diagnostic[] } {
  const values = new Map<string, string>();
  const sink = new DiagnosticSink();
  const file = sources.file;
  if (file && file.syntaxErrors.length === 0) {
    const root = file.value;
    if (!isObject(root)) {
      sink.at(file, [], 'error', 'secrets/not-object', 'secrets.json must be an object mapping secret names to string values');
    } else {
      const { entries, invalid } = secretEntries(root);
      for (const { name, value } of entries) values.set(name, value);
      for (const path of invalid) sink.at(file, path, 'error', 'secrets/not-string', `the value of secret '${String(path[path.length - 1])}' must be a string`);
    }
  }
  for (const flag of sources.flags ?? []) {
    const { name, value } = parseSecretFlag(flag);
    values.set(name, value);
  }
  const store: SecretStore = {
    names: [...values.keys()],
    has: (name) => values.has(name),
    resolve(name, neededBy) {
      const value = values.get(name);
      if (value === undefined) throw new MissingSecretError(name, neededBy);
      return value;
    },
  };
  return { store, diagnostics: sink.items };
}

/** Secrets the app refers to, with where: custom JWT signing keys, OAuth client secrets, values from secrets, endpoint secrets. */
export function secretReferences(app: AppModel): Array<{ name: string; neededBy: string; file: JsonFile; path: (string | number)[] }> {
  const refs: Array<{ name: string; neededBy: string; file: JsonFile; path: (string | number)[] }> = [];
  for (const p of app.authProviders) {
    if (p.disabled) continue;
    for (const [option, ref] of Object.entries(p.secretConfig)) {
      if (option === 'signingKeys' && p.config.useJWKURI === true) continue;
      const names = Array.isArray(ref) ? ref : [ref];
      names.forEach((name, i) => {
        if (typeof name === 'string' && name !== '') {
          refs.push({ name, neededBy: `auth provider '${p.name}'`, file: p.source.file, path: [...p.source.path, 'secret_config', option, ...(Array.isArray(ref) ? [i] : [])] });
        }
      });
    }
  }
  for (const v of app.values) {
    if (v.fromSecret && typeof v.value === 'string') refs.push({ name: v.value, neededBy: `value '${v.name}'`, file: v.file, path: ['value'] });
  }
  for (const e of app.endpoints) {
    if (!e.disabled && e.validationMethod && e.validationMethod !== 'NO_VALIDATION' && e.secretName) {
      refs.push({ name: e.secretName, neededBy: `endpoint '${e.route}'`, file: e.source.file, path: [...e.source.path, 'secret_name'] });
    }
  }
  return refs;
}

/** One diagnostic per secret the app needs that the store lacks, at the place that refers to it. */
export function missingSecretDiagnostics(app: AppModel, store: SecretStore): Diagnostic[] {
  const sink = new DiagnosticSink();
  for (const ref of secretReferences(app)) {
    if (store.has(ref.name)) continue;
    sink.at(ref.file, ref.path, 'error', 'secrets/missing-value', new MissingSecretError(ref.name, ref.neededBy).message, { data: { secret: ref.name } });
  }
  return sink.items;
}
