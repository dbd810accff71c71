// The language client's side of the extension, bundled apart (dist/language-client.js) and loaded right after
// activation: the client itself and the GraphQL support that talks to the server through it.
export { createLanguageClient, restartLanguageClient, serverStateOf } from './languageClient';
export { GraphqlSupport } from './graphql';
