// The files that let other GraphQL tools (codegen, the GraphQL Foundation's extension, graphql-config) work
// on an app: the generated schema as SDL, and a `graphql.config.yml` pointing at it.
export const TOOL_SCHEMA_FILE = 'schema.graphql';
export const TOOL_CONFIG_FILE = 'graphql.config.yml';

const marker = 'Written by App Services Local';

/** The SDL file: a header saying where it comes from, then the generated schema. */
export function toolSchemaText(sdl: string): string {
  return `# ${marker} from the app's collection schemas, relationships and custom resolvers.\n# Regenerated while the editor runs; edits here are overwritten.\n\n${sdl.trimEnd()}\n`;
}

/** A graphql-config file: the schema at `schemaPath` (relative to the config), documents anywhere below. */
export function toolConfigText(schemaPath: string): string {
  return [
    `# ${marker}: the app's generated GraphQL schema, for GraphQL tools.`,
    `schema: ${JSON.stringify(schemaPath)}`,
    `documents: "**/*.{graphql,gql,js,jsx,ts,tsx}"`,
    '',
  ].join('\n');
}

/** Whether a config file is one we wrote (so we keep its schema up to date, and never touch a user's own). */
export function isToolConfigOurs(text: string): boolean {
  return text.startsWith(`# ${marker}`);
}

/** The schema path a config of ours names. */
export function toolConfigSchemaPath(text: string): string | undefined {
  const match = /^schema:\s*(".*"|\S+)\s*$/m.exec(text);
  if (!match) return undefined;
  try {
    return match[1].startsWith('"') ? JSON.parse(match[1]) as string : match[1];
  } catch {
    return undefined;
  }
}
