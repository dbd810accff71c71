// Facts about one loaded app that completion and hover look up on every keystroke, computed once per
// app model (a reload makes a new model, so the cache never goes stale and never reloads anything).
import { isObject } from '../../core/json';
import type { GeneratedSchema } from '../../core/graphql';
import { isClusterSource, type AppModel, type Collection } from '../../core/model';
import type { ExpressionFacts } from '../../core/rules';
import { appFacts } from '../../core/validate/expressions';
import type { LoadedApp } from '../workspace';

export interface AppIndex {
  generated: GeneratedSchema;
  facts: ExpressionFacts;
  functionNames: string[];
  /** Secret names the app mentions or supplies locally, for `signingKeys` and the like. */
  secretNames: string[];
  /** Collections whose schema takes part in partition-based sync. */
  syncedSchemas: Collection[];
}

const indexes = new WeakMap<AppModel, AppIndex>();

export function indexOf(app: LoadedApp): AppIndex {
  const hit = indexes.get(app.model);
  if (hit) return hit;
  const model = app.model;
  const index: AppIndex = {
    generated: app.cache.generatedSchema(model),
    facts: appFacts(model),
    functionNames: [...model.functions.keys()].sort(),
    secretNames: secretNamesOf(model),
    syncedSchemas: syncedSchemasOf(model),
  };
  indexes.set(model, index);
  return index;
}

function secretNamesOf(app: AppModel): string[] {
  const names = new Set<string>();
  if (app.secretsFile && isObject(app.secretsFile.value)) for (const name of Object.keys(app.secretsFile.value)) names.add(name);
  for (const v of app.values) if (v.fromSecret && typeof v.value === 'string') names.add(v.value);
  for (const p of app.authProviders) {
    for (const option of Object.values(p.secretConfig)) {
      for (const name of Array.isArray(option) ? option : [option]) if (typeof name === 'string' && name !== '') names.add(name);
    }
  }
  for (const e of app.endpoints) if (e.secretName) names.add(e.secretName);
  return [...names].sort();
}

/** The schemas of the synced data source, as sync/config.json picks it (core/validate/sync.ts does the same). */
function syncedSchemasOf(app: AppModel): Collection[] {
  const sync = app.sync;
  const ds = sync?.serviceName ? app.dataSources.find((d) => d.name === sync.serviceName) : app.dataSources.find(isClusterSource);
  if (!ds) return [];
  return ds.collections.filter((c) => isObject(c.schema?.value) && (!sync?.developmentModeEnabled || !sync.databaseName || c.database === sync.databaseName));
}

/** The properties of a collection schema, by name. */
export function schemaProperties(collection: Collection): Record<string, unknown> {
  const schema = collection.schema?.value;
  return isObject(schema) && isObject(schema.properties) ? schema.properties : {};
}

/** The bsonType names a property declares, without `null`. */
export function declaredBsonTypes(property: unknown): string[] {
  if (!isObject(property)) return [];
  return ([] as unknown[]).concat(property.bsonType ?? property.type).filter((t): t is string => typeof t === 'string' && t !== 'null');
}
