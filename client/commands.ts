// Every command the extension contributes, in one place. Kept free of `vscode` imports so a plain
// Node test can check it against the `contributes.commands` of client/contributes.json and package.json.

/** Shown before each title in the command palette: "App Services: Restart Language Server". */
export const commandCategory = 'App Services';

export const commands = {
  restartServer: { id: 'appServicesLocal.restartServer', title: 'Restart Language Server' },
  showOutput: { id: 'appServicesLocal.showOutput', title: 'Show Output' },
  writeGraphqlSchema: { id: 'appServicesLocal.writeGraphqlSchema', title: 'Write GraphQL Schema for Other Tools' },
  pickGraphqlApp: { id: 'appServicesLocal.pickGraphqlApp', title: 'Pick App for GraphQL Files' },
} as const;

export type CommandName = keyof typeof commands;
