// The workspace apps as `core` loads them (for the explorer, variable types and custom JWT keys), cached
// per app folder until a file of the app changes. No `vscode` imports.
import { nodeFileSystem } from '../core/fs';
import { generateSchema } from '../core/graphql';
import { loadApp } from '../core/load';
import type { AppModel } from '../core/model';
import { isObject } from '../core/json';
import type { GraphQLSchema } from 'graphql';

interface Loaded { app: AppModel; schema?: GraphQLSchema }

export class AppModels {
  private readonly loaded = new Map<string, Promise<Loaded>>();

  get(appDir: string): Promise<AppModel> {
    return this.entry(appDir).then((e) => e.app);
  }

  /** The GraphQL schema the runtime generates for the app (undefined when it cannot be built). */
  async schema(appDir: string): Promise<GraphQLSchema | undefined> {
    const entry = await this.entry(appDir);
    if (!entry.schema) {
      try { entry.schema = generateSchema(entry.app).schema; } catch { return undefined; }
    }
    return entry.schema;
  }

  private entry(appDir: string): Promise<Loaded> {
    let entry = this.loaded.get(appDir);
    if (!entry) {
      entry = loadApp(nodeFileSystem, appDir).then((app) => ({ app }));
      this.loaded.set(appDir, entry);
      entry.catch(() => this.loaded.delete(appDir));
    }
    return entry;
  }

  /** Forgets the apps a changed file belongs to (all of them when unknown). */
  invalidate(changedFile?: string): void {
    if (!changedFile) { this.loaded.clear(); return; }
    for (const dir of this.loaded.keys()) if (changedFile.startsWith(dir)) this.loaded.delete(dir);
  }
}

export interface CustomJwtSettings {
  providerName: string;
  /** The HS256 key's value, when the app's secrets (or the settings' `--secret` values) hold it. */
  key?: string;
  /** The name of the secret holding the key. */
  keyName?: string;
  algorithm: string;
  /** What `aud` should hold for the provider to accept the token. */
  audience: string | string[];
}

/** What minting a test JWT for the app's custom JWT provider needs, from its config and secrets. */
export function customJwtSettings(app: AppModel, appId: string, extraSecrets: readonly string[]): CustomJwtSettings | undefined {
  const provider = app.authProviders.find((p) => p.type === 'custom-token');
  if (!provider) return undefined;
  const names = Array.isArray(provider.secretConfig.signingKeys) ? provider.secretConfig.signingKeys.filter((n): n is string => typeof n === 'string') : [];
  const fromFlags = new Map(extraSecrets.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)] as const));
  const fileSecrets = isObject(app.secretsFile?.value) ? app.secretsFile.value : {};
  let key: string | undefined;
  let keyName: string | undefined;
  for (const name of names) {
    const value = fromFlags.get(name) ?? fileSecrets[name];
    keyName ??= name;
    if (typeof value === 'string') { key = value; keyName = name; break; }
  }
  const configured = provider.config.audience;
  const audience = typeof configured === 'string' && configured ? configured
    : Array.isArray(configured) && configured.length ? configured.filter((a): a is string => typeof a === 'string') : appId;
  return { providerName: provider.name, key, keyName, algorithm: typeof provider.config.signingAlgorithm === 'string' ? provider.config.signingAlgorithm : 'HS256', audience };
}
