// Cross-file checks that a JSON Schema cannot express: names that must exist elsewhere in the app,
// names that must be unique, and names that must agree with each other.
//
// Codes: auth/key-name-mismatch, auth/name-type-mismatch, auth/duplicate-custom-token, auth/unknown-function,
// custom-user-data/unknown-service, custom-user-data/unknown-collection, custom-user-data/unknown-function,
// function/duplicate-name, function/missing-source, resolver/unknown-function, resolver/duplicate-field,
// relationship/bad-ref, relationship/unknown-target, relationship/unknown-source-key,
// sync/unknown-service, sync/not-a-cluster, trigger/no-function, trigger/unknown-function, trigger/unknown-service,
// endpoint/unknown-function, value/duplicate-name, secrets/invalid, secret/no-local-value.
import type { DiagnosticSink } from '../diagnostics';
import { isObject, type JsonFile, type JSONPath } from '../json';
import { isClusterSource, type AppModel, type AuthProvider } from '../model';
import { secretEntries } from '../secrets';
import { closestName } from '../spelling';

/** Provider types whose `name` must equal their `type` (config-format §5.1). */
const BUILT_IN_PROVIDER_TYPES = new Set(['anon-user', 'api-key', 'local-userpass', 'custom-token', 'custom-function', 'oauth2-google', 'oauth2-facebook', 'oauth2-apple']);

export function validateReferences(app: AppModel, sink: DiagnosticSink): void {
  checkProviders(app, sink);
  checkCustomUserData(app, sink);
  checkFunctions(app, sink);
  checkResolvers(app, sink);
  checkRelationships(app, sink);
  checkSync(app, sink);
  checkTriggers(app, sink);
  checkEndpoints(app, sink);
  checkValues(app, sink);
  checkSecrets(app, sink);
}

function functionMissing(app: AppModel, name: string): boolean {
  return name !== '' && !app.functions.has(name);
}

function functionHint(app: AppModel, name: string): string {
  const close = closestName(name, [...app.functions.keys()]);
  return close ? ` Did you mean "${close}"?` : '';
}

function checkProviders(app: AppModel, sink: DiagnosticSink): void {
  const customTokens: AuthProvider[] = [];
  for (const p of app.authProviders) {
    const { file, path } = p.source;
    const key = path[0];
    if (typeof key === 'string' && p.name !== key) {
      sink.at(file, [...path, 'name'], 'error', 'auth/key-name-mismatch', `Provider "${key}" is stored under its name; "name" must be "${key}", found "${p.name}"`);
    }
    if (BUILT_IN_PROVIDER_TYPES.has(p.type) && p.name !== p.type) {
      sink.at(file, [...path, 'name'], 'error', 'auth/name-type-mismatch', `The ${p.type} provider must be named "${p.type}" (built-in providers are named after their type); found "${p.name}"`,
        { data: { expected: p.type } });
    }
    if (p.type === 'custom-token') customTokens.push(p);
    const fnKeys: Array<[string, string | undefined]> = p.type === 'local-userpass'
      ? [['confirmationFunctionName', p.config.runConfirmationFunction === true ? 'runConfirmationFunction' : undefined], ['resetFunctionName', p.config.runResetFunction === true ? 'runResetFunction' : undefined]]
      : p.type === 'custom-function' ? [['authFunctionName', 'always']] : [];
    for (const [configKey, requiredBy] of fnKeys) {
      const name = p.config[configKey];
      if (typeof name === 'string' && functionMissing(app, name)) {
        sink.at(file, [...path, 'config', configKey], requiredBy ? 'error' : 'warning', 'auth/unknown-function',
          `"${configKey}" names the function "${name}", which does not exist in functions/.${functionHint(app, name)}`, { data: { functionName: name } });
      } else if (name === undefined && requiredBy && requiredBy !== 'always') {
        sink.at(file, [...path, 'config', requiredBy], 'error', 'auth/missing-function', `"${requiredBy}" is true but no "${configKey}" is set`);
      }
    }
  }
  for (const extra of customTokens.slice(1)) {
    sink.at(extra.source.file, [...extra.source.path, 'type'], 'error', 'auth/duplicate-custom-token', 'An app can have only one custom JWT (custom-token) provider');
  }
}

function checkCustomUserData(app: AppModel, sink: DiagnosticSink): void {
  const cud = app.customUserData;
  if (!cud?.enabled) return;
  const { file } = cud.source;
  const ds = app.dataSources.find((d) => d.name === cud.serviceName);
  if (cud.serviceName !== undefined && !ds) {
    sink.at(file, ['mongo_service_name'], 'error', 'custom-user-data/unknown-service', `No data source named "${cud.serviceName}" (known: ${app.dataSources.map((d) => d.name).join(', ') || 'none'})`);
  } else if (ds && cud.databaseName && cud.collectionName
    && !ds.collections.some((c) => c.database === cud.databaseName && c.collection === cud.collectionName)) {
    sink.at(file, ['collection_name'], 'warning', 'custom-user-data/unknown-collection',
      `No collection ${cud.databaseName}.${cud.collectionName} is configured under data_sources/${ds.name}; custom user data will always be empty unless the runtime's store holds it`);
  }
  if (cud.onUserCreationFunctionName && functionMissing(app, cud.onUserCreationFunctionName)) {
    sink.at(file, ['on_user_creation_function_name'], 'error', 'custom-user-data/unknown-function', `The function "${cud.onUserCreationFunctionName}" does not exist.${functionHint(app, cud.onUserCreationFunctionName)}`,
      { data: { functionName: cud.onUserCreationFunctionName } });
  }
}

function checkFunctions(app: AppModel, sink: DiagnosticSink): void {
  const manifest = app.functionsManifest;
  if (manifest && Array.isArray(manifest.value)) {
    const seen = new Set<string>();
    manifest.value.forEach((item, i) => {
      if (!isObject(item) || typeof item.name !== 'string') return;
      if (seen.has(item.name)) sink.at(manifest, [i, 'name'], 'error', 'function/duplicate-name', `The function "${item.name}" is listed twice in functions/config.json`);
      seen.add(item.name);
    });
  }
  for (const fn of app.functions.values()) {
    if (fn.manifest && !fn.sourceFile) {
      // The platform's own deployments write no file for a function whose source is empty, so an export can lack one.
      const expected = fn.manifest.path.length === 0 ? `${fn.manifest.file.relPath.replace(/config\.json$/, '')}source.js` : `functions/${fn.name}.js`;
      sink.at(fn.manifest.file, [...fn.manifest.path, 'name'], 'warning', 'function/missing-source', `The function "${fn.name}" has no source file (expected ${expected}); calling it fails until there is one.`, { data: { functionName: fn.name } });
    }
  }
}

function checkResolvers(app: AppModel, sink: DiagnosticSink): void {
  const fields = new Map<string, JsonFile>();
  for (const r of app.graphql.customResolvers) {
    if (r.functionName && functionMissing(app, r.functionName)) {
      const hasInput = r.inputTypeFormat !== '' && r.inputType !== undefined;
      sink.at(r.file, ['function_name'], 'error', 'resolver/unknown-function',
        `The resolver's function "${r.functionName}" does not exist in functions/.${functionHint(app, r.functionName)}`,
        { data: { functionName: r.functionName, hasInput, computed: r.onType !== 'Query' && r.onType !== 'Mutation' } });
    }
    if (!r.onType || !r.fieldName) continue;
    const key = `${r.onType}.${r.fieldName}`;
    const first = fields.get(key);
    if (first) sink.at(r.file, ['field_name'], 'error', 'resolver/duplicate-field', `${key} is already defined by ${first.relPath}; field names must be unique per parent type`);
    else fields.set(key, r.file);
  }
}

const REF_PATTERN = /^#\/relationship\/([^/]+)\/([^/]+)\/([^/]+)$/;

function checkRelationships(app: AppModel, sink: DiagnosticSink): void {
  // Every collection once (a search per relationship grows with the square of the collections).
  const collectionsOf = new Map<string, Set<string>>();
  for (const d of app.dataSources) {
    if (!collectionsOf.has(d.name)) collectionsOf.set(d.name, new Set(d.collections.map((c) => `${c.database}\u0000${c.collection}`)));
  }
  for (const ds of app.dataSources) {
    for (const coll of ds.collections) {
      const file = coll.relationships;
      if (!file || !isObject(file.value)) continue;
      const properties = isObject(coll.schema?.value) && isObject(coll.schema.value.properties) ? coll.schema.value.properties : undefined;
      for (const [field, rel] of Object.entries(file.value)) {
        if (!isObject(rel)) continue;
        const at: JSONPath = [field];
        if (typeof rel.ref === 'string') {
          const m = REF_PATTERN.exec(rel.ref);
          if (!m) {
            sink.at(file, [...at, 'ref'], 'error', 'relationship/bad-ref', `"ref" must look like "#/relationship/<data source>/<database>/<collection>"; found "${rel.ref}"`);
          } else {
            const [, svc, db, target] = m;
            const targetDs = app.dataSources.find((d) => d.name === svc);
            const exists = collectionsOf.get(svc!)?.has(`${db}\u0000${target}`);
            if (!exists) {
              sink.at(file, [...at, 'ref'], 'error', 'relationship/unknown-target',
                targetDs ? `No collection ${db}.${target} under data_sources/${svc}` : `No data source named "${svc}"`);
            }
          }
        }
        const sourceKey = typeof rel.source_key === 'string' ? rel.source_key : field;
        if (properties && !(sourceKey in properties)) {
          sink.at(file, typeof rel.source_key === 'string' ? [...at, 'source_key'] : at, 'error', 'relationship/unknown-source-key',
            `The source field "${sourceKey}" is not a property of ${coll.database}.${coll.collection}'s schema`, { target: typeof rel.source_key === 'string' ? 'value' : 'key' });
        }
      }
    }
  }
}

function checkSync(app: AppModel, sink: DiagnosticSink): void {
  const sync = app.sync;
  if (!sync?.serviceName) return;
  const ds = app.dataSources.find((d) => d.name === sync.serviceName);
  if (!ds) {
    sink.at(sync.file, ['service_name'], 'error', 'sync/unknown-service', `No data source named "${sync.serviceName}" (known: ${app.dataSources.map((d) => d.name).join(', ') || 'none'})`);
  } else if (!isClusterSource(ds)) {
    sink.at(sync.file, ['service_name'], 'error', 'sync/not-a-cluster', `"${ds.name}" is a ${ds.type || 'untyped'} data source; sync needs a linked cluster (mongodb-atlas), not a serverless or federated instance`);
  }
}

function checkTriggers(app: AppModel, sink: DiagnosticSink): void {
  for (const t of app.triggers) {
    const v = isObject(t.file.value) ? t.file.value : undefined;
    if (v && !t.functionName && v.event_processors === undefined) {
      sink.at(t.file, ['name'], 'warning', 'trigger/no-function', `The trigger "${t.name}" names no function nor event processor, so nothing runs when it fires; the local runtime leaves it out.`, { target: 'key' });
    }
    if (t.functionName && functionMissing(app, t.functionName)) {
      const path = isObject(t.file.value) && isObject(t.file.value.event_processors) ? ['event_processors', 'FUNCTION', 'config', 'function_name'] : ['function_name'];
      sink.at(t.file, path, 'error', 'trigger/unknown-function', `The trigger's function "${t.functionName}" does not exist.${functionHint(app, t.functionName)}`, { data: { functionName: t.functionName } });
    }
    const service = t.config.service_name;
    if (t.type === 'DATABASE' && typeof service === 'string' && !app.dataSources.some((d) => d.name === service)) {
      sink.at(t.file, ['config', 'service_name'], 'error', 'trigger/unknown-service', `No data source named "${service}"`);
    }
  }
}

function checkEndpoints(app: AppModel, sink: DiagnosticSink): void {
  for (const e of app.endpoints) {
    if (e.functionName && functionMissing(app, e.functionName)) {
      sink.at(e.source.file, [...e.source.path, 'function_name'], 'error', 'endpoint/unknown-function', `The endpoint's function "${e.functionName}" does not exist.${functionHint(app, e.functionName)}`, { data: { functionName: e.functionName } });
    }
  }
}

function checkValues(app: AppModel, sink: DiagnosticSink): void {
  const seen = new Map<string, JsonFile>();
  for (const v of app.values) {
    const first = seen.get(v.name);
    if (first) sink.at(v.file, ['name'], 'error', 'value/duplicate-name', `The value "${v.name}" is already defined in ${first.relPath}`);
    else seen.set(v.name, v.file);
  }
}

/**
 * Exports carry secret names, never values; the runtime reads values from `secrets.json` at the app root
 * or `asl serve --secret NAME=VALUE`. A secret nobody supplied locally is a warning saying how to supply it.
 */
function checkSecrets(app: AppModel, sink: DiagnosticSink): void {
  const secretsFile = app.secretsFile;
  const { entries, invalid } = secretsFile && isObject(secretsFile.value) ? secretEntries(secretsFile.value) : { entries: [], invalid: [] };
  const local: Record<string, string> = Object.fromEntries(entries.map((e) => [e.name, e.value]));
  if (secretsFile && secretsFile.value !== undefined) {
    if (!isObject(secretsFile.value)) sink.at(secretsFile, [], 'error', 'secrets/invalid', 'secrets.json must be an object mapping secret names to their values');
    for (const path of invalid) sink.at(secretsFile, path, 'error', 'secrets/invalid', `The value of the secret "${String(path[path.length - 1])}" must be a string`);
  }
  const howTo = (name: string) => `add it to secrets.json at the app root ({"${name}": "..."}) or pass --secret ${name}=... to asl serve`;
  for (const p of app.authProviders) {
    const keys = p.secretConfig.signingKeys;
    if (p.type !== 'custom-token' || p.config.useJWKURI === true || !Array.isArray(keys)) continue;
    keys.forEach((name, i) => {
      if (typeof name === 'string' && !(name in local)) {
        sink.at(p.source.file, [...p.source.path, 'secret_config', 'signingKeys', i], 'warning', 'secret/no-local-value',
          `The signing key secret "${name}" has no local value (exports never carry secret values); ${howTo(name)}`, { data: { secretName: name } });
      }
    });
  }
  for (const v of app.values) {
    if (v.fromSecret && typeof v.value === 'string' && !(v.value in local)) {
      sink.at(v.file, ['value'], 'warning', 'secret/no-local-value', `The value "${v.name}" reads the secret "${v.value}", which has no local value; ${howTo(v.value)}`, { data: { secretName: v.value } });
    }
  }
}

