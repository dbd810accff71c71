// Builds in-memory apps for tests: a map of relative path → file content under a fake root.
import path from 'node:path';
import { memoryFileSystem, type AppFileSystem } from '../../core/fs';

export const APP_ROOT = path.resolve('/virtual/app');

export function appFs(files: Record<string, unknown>, root = APP_ROOT): AppFileSystem {
  return memoryFileSystem(Object.fromEntries(Object.entries(files).map(([rel, content]) =>
    [path.join(root, rel), typeof content === 'string' ? content : JSON.stringify(content, null, 2)])));
}

/** A small but complete v2 app; tests override or delete entries. */
export function baseApp(): Record<string, unknown> {
  return {
    'realm_config.json': { config_version: 20210101, app_id: 'tasks-abcde', name: 'tasks', location: 'US-VA', deployment_model: 'GLOBAL' },
    'auth/providers.json': {
      'local-userpass': { name: 'local-userpass', type: 'local-userpass', disabled: false, config: { autoConfirm: true, resetFunctionName: 'resetFunc', runResetFunction: true } },
      'api-key': { name: 'api-key', type: 'api-key', disabled: false },
    },
    'auth/custom_user_data.json': { enabled: false },
    'functions/config.json': [{ name: 'resetFunc', private: true }, { name: 'renameTask', private: false }],
    'functions/resetFunc.js': 'exports = () => ({ status: "fail" });\n',
    'functions/renameTask.js': 'exports = async ({ taskId, name }) => ({ _id: taskId, name });\n',
    'data_sources/mongodb-atlas/config.json': { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName: 'Cluster0' } },
    'data_sources/mongodb-atlas/todo/Task/schema.json': {
      title: 'Task', bsonType: 'object', required: ['_id', 'name'],
      properties: { _id: { bsonType: 'objectId' }, name: { bsonType: 'string' }, assignee: { bsonType: 'objectId' } },
    },
    'data_sources/mongodb-atlas/todo/Task/relationships.json': { assignee: { ref: '#/relationship/mongodb-atlas/todo/User', source_key: 'assignee', foreign_key: '_id', is_list: false } },
    'data_sources/mongodb-atlas/todo/Task/rules.json': { database: 'todo', collection: 'Task', roles: [], filters: [] },
    'data_sources/mongodb-atlas/todo/User/rules.json': { database: 'todo', collection: 'User', roles: [], filters: [] },
    'data_sources/mongodb-atlas/todo/User/schema.json': { title: 'User', bsonType: 'object', properties: { _id: { bsonType: 'objectId' }, name: { bsonType: 'string' } } },
    'graphql/config.json': { use_natural_pluralization: true },
    'graphql/custom_resolvers/mutation_renameTask.json': {
      on_type: 'Mutation', field_name: 'renameTask', function_name: 'renameTask', input_type_format: 'custom',
      input_type: { title: 'RenameTaskInput', bsonType: 'object', required: ['taskId', 'name'], properties: { taskId: { bsonType: 'objectId' }, name: { bsonType: 'string' } } },
      payload_type_format: 'generated', payload_type: 'Task',
    },
    'sync/config.json': { development_mode_enabled: false },
    'environments/no-environment.json': { values: {} },
    'values/appName.json': { name: 'appName', from_secret: false, value: 'Tasks' },
  };
}
