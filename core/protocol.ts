// Custom messages between the extension client and the language server, declared once.
// Plain method names and parameter types: both sides wrap them in their library's message types.

/** Server → client after every (re)load: what the workspace holds. */
export const STATUS_NOTIFICATION = 'asl/status';

export interface AppSummary {
  root: string;
  name: string;
  appId?: string;
  errors: number;
  warnings: number;
}

export interface StatusParams {
  state: 'loading' | 'ready';
  apps: AppSummary[];
}

/** Client → server: which app's schema the GraphQL of a document is checked against. */
export const GRAPHQL_APP_REQUEST = 'asl/graphqlApp';

export interface GraphqlAppParams { uri: string }

/** `folder`: the app's folder holds the file; `only`: the workspace's only app; `setting`: `appServicesLocal.graphql.app`. */
export type GraphqlAppReason = 'folder' | 'only' | 'setting';

export interface GraphqlAppResult {
  /** Absent when no app applies (several apps, none chosen) or GraphQL features are off. */
  app?: { root: string; name: string; reason: GraphqlAppReason };
  /** Every app of the workspace, to pick from. */
  choices: Array<{ root: string; name: string }>;
  enabled: boolean;
}

/** The GraphQL settings the server reads (`appServicesLocal.graphql.*`), in initializationOptions and configuration changes. */
export interface GraphqlSettings {
  enable: boolean;
  /** App root folder or name used for GraphQL outside any app's folder when the workspace has several apps. */
  app?: string;
}

/** Client → server: the generated schema of one app as SDL (for "Write GraphQL Schema for Other Tools"). */
export const GRAPHQL_SCHEMA_REQUEST = 'asl/graphqlSchema';

export interface GraphqlSchemaParams { root: string }

/** `sdl` is absent when the server has no app at that root. */
export interface GraphqlSchemaResult { sdl?: string }

/**
 * Client → server: the fragments an operation spreads that its own file does not define, from the other
 * files checked against the same app (for the query runner), with the fragments those spread in turn.
 */
export const GRAPHQL_FRAGMENTS_REQUEST = 'asl/graphqlFragments';

export interface GraphqlFragmentsParams { uri: string; names: string[] }

/** Each fragment's definition as written in its file; a name no file defines is absent. */
export interface GraphqlFragmentsResult { fragments: Array<{ name: string; file: string; text: string }> }
