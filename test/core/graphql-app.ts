// Builds a minimal AppModel for GraphQL generation tests from a map of app-relative paths to file
// contents, without the loader: collection schemas and relationships under data_sources/, custom
// resolvers under graphql/custom_resolvers/.
import path from 'node:path';
import { JsonFile } from '../../core/json';
import type { AppModel, Collection, CustomResolver, DataSource } from '../../core/model';
import { customResolverOf } from '../../core/load';

export const GRAPHQL_APP_ROOT = path.resolve('/graphql-test-app');

export interface TestAppOptions {
  naturalPluralization?: boolean;
  /** Data source name → type; data sources not listed are `mongodb-atlas`. */
  dataSourceTypes?: Record<string, string>;
}

/** File contents may be given as text or as a JSON value (printed with two-space indentation). */
export function graphqlTestApp(files: Record<string, unknown>, options: TestAppOptions = {}): AppModel {
  const jsonFiles = new Map<string, JsonFile>();
  const dataSources = new Map<string, DataSource>();
  const collections = new Map<string, Collection>();
  const customResolvers: CustomResolver[] = [];
  const rootFile = new JsonFile(path.join(GRAPHQL_APP_ROOT, 'realm_config.json'), 'realm_config.json', '{"config_version": 20210101, "name": "test"}');
  let graphqlConfig: JsonFile | undefined;

  for (const [relPath, content] of Object.entries(files)) {
    const absPath = path.join(GRAPHQL_APP_ROOT, relPath);
    const file = new JsonFile(absPath, relPath, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    jsonFiles.set(absPath, file);
    const parts = relPath.split('/');
    if (parts[0] === 'data_sources' && parts.length === 5) {
      const [, sourceName, database, collectionName, fileName] = parts;
      const dataSource = dataSourceNamed(dataSources, sourceName, options.dataSourceTypes?.[sourceName] ?? 'mongodb-atlas');
      const key = `${sourceName}/${database}/${collectionName}`;
      let collection = collections.get(key);
      if (!collection) {
        collection = { dataSource: sourceName, database, collection: collectionName, dir: path.dirname(absPath) };
        collections.set(key, collection);
        dataSource.collections.push(collection);
      }
      if (fileName === 'schema.json') collection.schema = file;
      else if (fileName === 'relationships.json') collection.relationships = file;
      else if (fileName === 'rules.json') collection.rules = file;
    } else if (parts[0] === 'graphql' && parts[1] === 'custom_resolvers') {
      customResolvers.push(customResolverOf(file));
    } else if (relPath === 'graphql/config.json') {
      graphqlConfig = file;
    }
  }

  return {
    rootDir: GRAPHQL_APP_ROOT,
    generation: '20210101',
    configVersion: 20210101,
    rootFile,
    name: 'test',
    allowedRequestOrigins: [],
    authProviders: [],
    functions: new Map(),
    dataSources: [...dataSources.values()],
    graphql: {
      config: graphqlConfig,
      useNaturalPluralization: options.naturalPluralization ?? true,
      disableSchemaIntrospection: false,
      customResolvers,
    },
    values: [],
    environments: [],
    triggers: [],
    endpoints: [],
    files: jsonFiles,
    loadDiagnostics: [],
  };
}

function dataSourceNamed(dataSources: Map<string, DataSource>, name: string, type: string): DataSource {
  let dataSource = dataSources.get(name);
  if (!dataSource) {
    const dir = path.join(GRAPHQL_APP_ROOT, 'data_sources', name);
    const file = new JsonFile(path.join(dir, 'config.json'), `data_sources/${name}/config.json`, JSON.stringify({ name, type }));
    dataSource = { name, type, config: {}, file, dir, collections: [] };
    dataSources.set(name, dataSource);
  }
  return dataSource;
}

export function appPath(relPath: string): string {
  return path.join(GRAPHQL_APP_ROOT, relPath);
}
