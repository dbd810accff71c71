// What the GraphQL language status item says: which app's schema the active file's GraphQL is checked
// against. No `vscode` imports: plain Node tests check the wording.
import type { GraphqlAppResult } from '../core/protocol';

export interface GraphqlStatusView {
  text: string;
  detail: string;
  /** No app applies: the user has to pick one (or GraphQL features are off). */
  needsAttention: boolean;
  /** Offer the pick command (several apps to choose from). */
  canPick: boolean;
}

const reasons = {
  folder: 'the file is in its folder',
  only: 'the only app of the workspace',
  setting: 'chosen in appServicesLocal.graphql.app',
} as const;

export function describeGraphqlApp(result: GraphqlAppResult): GraphqlStatusView {
  const canPick = result.choices.length > 1;
  if (!result.enabled) {
    return { text: 'GraphQL: off', detail: 'App Services GraphQL features are turned off (appServicesLocal.graphql.enable)', needsAttention: false, canPick: false };
  }
  if (!result.app) {
    return result.choices.length
      ? { text: 'GraphQL: no app', detail: `${result.choices.length} apps in the workspace: pick the one whose schema applies`, needsAttention: true, canPick }
      : { text: 'GraphQL: no app', detail: 'No App Services app in the workspace', needsAttention: true, canPick: false };
  }
  return { text: `GraphQL: ${result.app.name}`, detail: `Schema of ${result.app.name}: ${reasons[result.app.reason]}`, needsAttention: false, canPick };
}
