// Every command the extension contributes, in one place. Kept free of `vscode` imports so a plain
// Node test can check it against the `contributes.commands` of client/contributes.json and package.json.

/** Shown before each title in the command palette: "App Services: Restart Language Server". */
export const commandCategory = 'App Services';

export const commands = {
  restartServer: { id: 'appServicesLocal.restartServer', title: 'Restart Language Server' },
  showOutput: { id: 'appServicesLocal.showOutput', title: 'Show Output' },
  writeGraphqlSchema: { id: 'appServicesLocal.writeGraphqlSchema', title: 'Write GraphQL Schema for Other Tools' },
  pickGraphqlApp: { id: 'appServicesLocal.pickGraphqlApp', title: 'Pick App for GraphQL Files' },
  startRuntime: { id: 'appServicesLocal.startRuntime', title: 'Start Runtime' },
  stopRuntime: { id: 'appServicesLocal.stopRuntime', title: 'Stop Runtime' },
  restartRuntime: { id: 'appServicesLocal.restartRuntime', title: 'Restart Runtime' },
  debugFunctions: { id: 'appServicesLocal.debugFunctions', title: 'Debug Functions' },
  showRuntimeLogs: { id: 'appServicesLocal.showRuntimeLogs', title: 'Show Runtime Logs' },
  openInBrowser: { id: 'appServicesLocal.openInBrowser', title: 'Open Runtime in Browser' },
  clearLocalData: { id: 'appServicesLocal.clearLocalData', title: 'Clear Local Data…' },
  attachRuntime: { id: 'appServicesLocal.attachRuntime', title: 'Attach to a Running Runtime…' },
  selectApp: { id: 'appServicesLocal.selectApp', title: 'Select the App to Run…' },
  runtimeActions: { id: 'appServicesLocal.runtimeActions', title: 'Runtime Actions…' },
  runOperation: { id: 'appServicesLocal.runOperation', title: 'Run GraphQL Operation at Cursor' },
  runOperationAs: { id: 'appServicesLocal.runOperationAs', title: 'Run GraphQL Operation As…' },
  runSelection: { id: 'appServicesLocal.runSelection', title: 'Run Selected GraphQL' },
  rerunHistory: { id: 'appServicesLocal.rerunHistory', title: 'Run Again' },
  openHistoryResult: { id: 'appServicesLocal.openHistoryResult', title: 'Open Result' },
  copyHistoryCurl: { id: 'appServicesLocal.copyHistoryCurl', title: 'Copy as curl' },
  clearHistory: { id: 'appServicesLocal.clearHistory', title: 'Clear Query History' },
  refreshExplorer: { id: 'appServicesLocal.refreshExplorer', title: 'Refresh App Explorer' },
  browseDocuments: { id: 'appServicesLocal.browseDocuments', title: 'Browse Documents' },
  runFunctionAs: { id: 'appServicesLocal.runFunctionAs', title: 'Run Function As…' },
  insertSampleOperation: { id: 'appServicesLocal.insertSampleOperation', title: 'Insert Sample Operation' },
  createUser: { id: 'appServicesLocal.createUser', title: 'Create User…' },
  deleteUser: { id: 'appServicesLocal.deleteUser', title: 'Delete User' },
  createAppFromTemplate: { id: 'appServicesLocal.createAppFromTemplate', title: 'Create App from Template…' },
  downloadTemplateClient: { id: 'appServicesLocal.downloadTemplateClient', title: 'Download Template Client Code…' },
  openPartitionAsUser: { id: 'appServicesLocal.openPartitionAsUser', title: 'Open Partition as User…' },
  showSyncSessions: { id: 'appServicesLocal.showSyncSessions', title: 'Show Sync Sessions' },
  refreshSyncSessions: { id: 'appServicesLocal.refreshSyncSessions', title: 'Refresh Sync Sessions' },
  showSyncSessionTraffic: { id: 'appServicesLocal.showSyncSessionTraffic', title: 'Show Sync Session Traffic' },
} as const;

/** The "Sync Sessions" view of the App Services view container. */
export const syncSessionsViewId = 'appServicesLocal.syncSessions';

export type CommandName = keyof typeof commands;

/** Context key, true while the editor's runtime runs (or one is attached); the walkthrough's runtime step completes on it. */
export const runtimeRunningContext = 'appServicesLocal.runtimeRunning';
