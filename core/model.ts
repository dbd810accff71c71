// The app model: one typed view of an exported app, whatever its config generation.
// Values are normalised with safe defaults; every entry keeps the file (and JSON path) it came from,
// so validators can report problems at the exact key. Wrong types are reported by validation, not here.
import type { JSONPath, JsonFile, TextFile } from './json';
import type { Diagnostic } from './diagnostics';

export type Generation = 'legacy' | '20210101' | '20230101';

/** Where an entry of the model was declared. */
export interface Source { file: JsonFile; path: JSONPath }

export interface AppModel {
  /** Absolute path of the app's root folder. */
  rootDir: string;
  generation: Generation;
  configVersion: number;
  rootFile: JsonFile;
  /** `.mdb/meta.json` or `.mdb/app_meta.json`, when present. */
  metaFile?: JsonFile;
  name: string;
  /** Client app id from the root file or `.mdb` metadata, when the export carries one. */
  appId?: string;
  groupId?: string;
  location?: string;
  deploymentModel?: string;
  environment?: string;
  allowedRequestOrigins: string[];

  authProviders: AuthProvider[];
  customUserData?: CustomUserDataConfig;
  /** Functions by name (`endpoint/hello` for `functions/endpoint/hello.js`). */
  functions: Map<string, AppFunction>;
  functionsManifest?: JsonFile;
  dataSources: DataSource[];
  graphql: GraphqlConfig;
  sync?: SyncConfig;
  values: AppValue[];
  environments: AppEnvironment[];
  triggers: Trigger[];
  endpoints: Endpoint[];
  /** `http_endpoints` (v2) or `https_endpoints` (v3); both are accepted. */
  endpointsFolder?: string;
  dataApiConfig?: JsonFile;
  /** Legacy `secrets.json` at the root, or a local one supplied by the user (name → value). */
  secretsFile?: JsonFile;

  /** Every JSON file that was read, by absolute path. */
  files: Map<string, JsonFile>;
  /** Problems found while loading (syntax errors, unreadable or misplaced files). Validation adds more. */
  loadDiagnostics: Diagnostic[];
}

export interface AuthProvider {
  name: string;
  type: string;
  disabled: boolean;
  config: Record<string, unknown>;
  /** Option → name of a secret (`signingKeys: ["jwt_key"]`). Exports never carry secret values. */
  secretConfig: Record<string, unknown>;
  metadataFields: unknown[];
  redirectUris: unknown[];
  source: Source;
}

export interface CustomUserDataConfig {
  enabled: boolean;
  serviceName?: string;
  databaseName?: string;
  collectionName?: string;
  userIdField?: string;
  onUserCreationFunctionName?: string;
  source: Source;
}

export interface AppFunction {
  name: string;
  private: boolean;
  /** Rule expression; `{}` or absent means always. */
  canEvaluate?: unknown;
  disableArgLogs: boolean;
  runAsSystem: boolean;
  runAsUserId?: string;
  runAsUserIdScriptSource?: string;
  /** The manifest entry (`functions/config.json[i]`, or legacy `functions/<name>/config.json`). */
  manifest?: Source;
  /** The function's JavaScript source; absent when the manifest names a function with no file. */
  sourceFile?: TextFile;
}

export interface DataSource {
  name: string;
  type: string;
  config: Record<string, unknown>;
  /** `data_sources/<name>/config.json` (legacy: `services/<name>/config.json`). */
  file: JsonFile;
  /** Absolute folder of the data source. */
  dir: string;
  defaultRule?: JsonFile;
  collections: Collection[];
}

export interface Collection {
  dataSource: string;
  database: string;
  collection: string;
  /** Absolute folder `data_sources/<svc>/<db>/<coll>`. */
  dir: string;
  schema?: JsonFile;
  rules?: JsonFile;
  relationships?: JsonFile;
}

export interface GraphqlConfig {
  config?: JsonFile;
  useNaturalPluralization: boolean;
  disableSchemaIntrospection: boolean;
  validationSettings?: JsonFile;
  customResolvers: CustomResolver[];
}

export type TypeFormat = '' | 'scalar' | 'scalar-list' | 'generated' | 'generated-list' | 'custom';

export interface CustomResolver {
  file: JsonFile;
  onType: string;
  fieldName: string;
  functionName: string;
  /** Scalar bsonType name, generated type name, or inline JSON schema (custom). */
  inputType?: unknown;
  inputTypeFormat: string;
  /** As `inputType`; absent → DefaultPayload. */
  payloadType?: unknown;
  payloadTypeFormat: string;
}

export interface SyncConfig {
  file: JsonFile;
  /** `partition`, `flexible`, or undefined when sync is unused. */
  type?: string;
  state?: string;
  developmentModeEnabled: boolean;
  serviceName?: string;
  databaseName?: string;
  partition?: PartitionConfig;
  clientMaxOfflineDays?: number;
  isRecoveryModeDisabled: boolean;
  /**
   * The local runtime's sync state from `.asl/sync/state.json` (its default data folder), when a runtime
   * has run this app: while it says enabled, the key and rules it runs are frozen.
   */
  runtimeState?: unknown;
}

export interface PartitionConfig {
  key?: string;
  type?: string;
  required: boolean;
  permissions: { read?: unknown; write?: unknown };
}

export interface AppValue {
  name: string;
  fromSecret: boolean;
  /** The value, or the secret's name when `fromSecret`. */
  value: unknown;
  file: JsonFile;
}

export interface AppEnvironment {
  /** `no-environment`, `development`, `testing`, `qa`, `production`. */
  name: string;
  values: Record<string, unknown>;
  file: JsonFile;
}

export interface Trigger {
  name: string;
  type: string;
  disabled: boolean;
  config: Record<string, unknown>;
  functionName?: string;
  file: JsonFile;
}

export interface Endpoint {
  route: string;
  httpMethod: string;
  functionName: string;
  validationMethod?: string;
  secretName?: string;
  respondResult: boolean;
  fetchCustomUserData: boolean;
  createUserOnAuth: boolean;
  disabled: boolean;
  source: Source;
}

/** The linked-cluster data source types; both spellings are accepted (spec README, "Decisions"). */
/** Linked clusters; `mongodb` is a self-managed deployment (`config.uri`), which the SDKs' test harnesses create. */
export const CLUSTER_SOURCE_TYPES = ['mongodb-atlas', 'cluster-source', 'mongodb'] as const;

export function isClusterSource(ds: DataSource): boolean {
  return (CLUSTER_SOURCE_TYPES as readonly string[]).includes(ds.type);
}

export function findCollection(app: AppModel, dataSource: string, database: string, collection: string): Collection | undefined {
  return app.dataSources.find((d) => d.name === dataSource)?.collections.find((c) => c.database === database && c.collection === collection);
}
