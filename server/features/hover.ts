// Hover in config files: the generated GraphQL SDL of types and resolver fields, rule expression tokens,
// what a name refers to (functions, secrets), and the bundled JSON Schemas' documentation of keys and values.
import { MarkupKind, type Hover, type Position } from 'vscode-languageserver';
import { findCollectionType, sdlForResolverField } from '../../core/graphql';
import { isObject, JsonFile, type Range, type TextFile } from '../../core/json';
import { describeRuleToken } from '../../core/rules';
import type { LoadedApp } from '../workspace';
import { indexOf } from './appIndex';
import { documentContextAt, type DocumentContext } from './documentContext';
import { describeAt } from './schemaDocs';
import { BSON_SCALARS, graphqlBlock, sdlMarkdown } from './shared';

export interface HoverOptions {
  /** Show the bundled JSON Schemas' descriptions (off when the editor already shows them). */
  schemaDocumentation: boolean;
}

export function hover(app: LoadedApp | undefined, file: JsonFile | TextFile, position: Position, options: HoverOptions = { schemaDocumentation: true }): Hover | null {
  if (!(file instanceof JsonFile)) return null;
  const ctx = documentContextAt(file, position);
  const node = ctx.target === 'value' ? file.nodeAt(ctx.path) : undefined;
  const value = ctx.string ? ctx.string.value : node && node.type !== 'object' && node.type !== 'array' ? node.value : undefined;
  if (ctx.target === 'value' && value === undefined && !ctx.string) return null;
  const parts: string[] = [];
  const semantic = app ? semanticHover(app, ctx, value) : undefined;
  if (semantic) parts.push(semantic);
  if (ctx.expression && ctx.string) {
    const rule = describeRuleToken(ctx.string.value);
    if (rule) parts.push(rule);
  } else if (options.schemaDocumentation) {
    const doc = describeAt(ctx.kind, file.value, ctx.path, ctx.target === 'value' ? value : undefined);
    if (doc) parts.push(doc);
  }
  if (!parts.length) return null;
  const range: Range | undefined = ctx.string?.tokenRange ?? (node ? file.rangeOf(node.offset, node.length) : undefined);
  return { contents: { kind: MarkupKind.Markdown, value: parts.join('\n\n---\n\n') }, ...(range ? { range } : {}) };
}

function semanticHover(app: LoadedApp, ctx: DocumentContext, value: unknown): string | undefined {
  const last = ctx.path[ctx.path.length - 1];
  if (ctx.target === 'value' && typeof value === 'string' && (last === 'function_name' || (last === 'name' && ctx.path[ctx.path.length - 2] === '%function') || /FunctionName$|_function_name$/.test(String(last)))) {
    return functionHover(app, value);
  }
  switch (ctx.kind) {
    case 'graphql-custom-resolver': return resolverHover(app, ctx, value);
    case 'collection-schema': return collectionSchemaHover(app, ctx);
    case 'auth-providers':
      return ctx.target === 'value' && ctx.path[1] === 'secret_config' && typeof value === 'string' ? secretHover(app, value) : undefined;
    default: return undefined;
  }
}

function resolverHover(app: LoadedApp, ctx: DocumentContext, value: unknown): string | undefined {
  const { generated } = indexOf(app);
  const resolver = app.model.graphql.customResolvers.find((r) => r.file.path === ctx.file.path);
  const [first] = ctx.path;
  const fieldSdl = () => {
    const sdl = resolver ? sdlForResolverField(generated, resolver) : undefined;
    return sdl ? `The field this resolver adds:\n\n${graphqlBlock(sdl)}` : 'This resolver is not in the generated schema; see its problems.';
  };
  if (first === 'field_name' || (first === 'on_type' && ctx.target === 'key')) return fieldSdl();
  if (first === 'on_type' && typeof value === 'string') {
    if (value === 'Query' || value === 'Mutation') return fieldSdl();
    return sdlMarkdown(generated, value) ?? `There is no generated document type \`${value}\`.`;
  }
  if ((first === 'input_type' || first === 'payload_type') && ctx.target === 'value') {
    if (ctx.path.length === 1 && typeof value === 'string') {
      const scalar = BSON_SCALARS.find(([bson]) => bson === value);
      if (scalar) return `bsonType \`${value}\` → GraphQL \`${scalar[1]}\``;
      return sdlMarkdown(generated, value);
    }
    if (last(ctx) === 'title') {
      const entry = generated.resolvers.find((r) => r.config === resolver);
      const ref = first === 'input_type' ? entry?.input : entry?.payload;
      const topLevel = ctx.path.length === 2 || (ctx.path.length === 3 && ctx.path[1] === 'items');
      if (ref?.kind === 'custom' && topLevel) return sdlMarkdown(generated, ref.typeName);
    }
  }
  return undefined;
}

function last(ctx: DocumentContext): string | number | undefined {
  return ctx.path[ctx.path.length - 1];
}

function collectionSchemaHover(app: LoadedApp, ctx: DocumentContext): string | undefined {
  const collection = app.model.dataSources.flatMap((d) => d.collections).find((c) => c.schema?.path === ctx.file.path);
  if (!collection) return undefined;
  const { generated } = indexOf(app);
  const type = findCollectionType(generated, collection.dataSource, collection.database, collection.collection);
  if (ctx.path.length === 1 && ctx.path[0] === 'title') {
    return type ? sdlMarkdown(generated, type.typeName) : `${collection.database}.${collection.collection} has no GraphQL type; see the problems of this file.`;
  }
  if (type && ctx.path.length === 2 && ctx.path[0] === 'properties' && ctx.target === 'key') {
    const field = type.fields.find((f) => f.sourceKey === ctx.path[1]);
    if (!field) return `\`${String(ctx.path[1])}\` is not exposed in GraphQL.`;
    const printed = generated.schema.getType(type.typeName);
    const gqlField = printed && 'getFields' in printed ? (printed.getFields() as Record<string, { type: unknown }>)[field.name] : undefined;
    return graphqlBlock(`type ${type.typeName} {\n  ${field.name}: ${String(gqlField?.type ?? '?')}\n}`);
  }
  return undefined;
}

function functionHover(app: LoadedApp, name: string): string {
  const fn = app.model.functions.get(name);
  if (!fn) return `No function named \`${name}\` in functions/.`;
  const facts = [
    fn.private ? 'private (not callable from clients)' : 'callable from clients',
    fn.runAsSystem ? 'runs as system' : undefined,
    fn.sourceFile ? `source: \`${fn.sourceFile.relPath}\`` : 'no source file',
  ].filter(Boolean);
  return `**function ${name}**: ${facts.join('; ')}`;
}

function secretHover(app: LoadedApp, name: string): string {
  const local = app.model.secretsFile && isObject(app.model.secretsFile.value) && name in app.model.secretsFile.value;
  return local
    ? `**secret ${name}**: its local value comes from secrets.json.`
    : `**secret ${name}**: no local value. Exports never carry secret values; add it to secrets.json at the app root (\`{"${name}": "..."}\`) or pass \`--secret ${name}=...\` to \`asl serve\`.`;
}
