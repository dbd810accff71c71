// Partition-based sync checks that span files: the partition key against every synced collection's
// schema, and the consistency of the sync config's own settings.
//
// Codes: sync/partition-key-missing, sync/partition-key-not-in-schema, sync/partition-type-mismatch,
// sync/partition-type-uuid, sync/dev-mode-needs-database, sync/partition-key-writable,
// sync/frozen-while-enabled, sync/writable-custom-user-data, sync/writable-access-field.
import type { DiagnosticSink, RelatedLocation } from '../diagnostics';
import { isObject, type JsonFile } from '../json';
import type { AppModel, Collection } from '../model';
import { frozenChanges, syncSettingsFromFile, type FrozenSettings } from '../sync/config';
import { frozenMessage } from '../sync/state';
import { validateFlexibleSync } from './syncFlexible';
import { validateSyncRoles } from './syncRoles';

/** bsonTypes a schema may declare for each `partition.type`. */
const SCHEMA_TYPES_FOR_PARTITION: Record<string, string[]> = {
  string: ['string'],
  objectId: ['objectId'],
  long: ['long', 'int'],
  uuid: ['uuid', 'binData'],
};

export function validateSync(app: AppModel, sink: DiagnosticSink): void {
  const sync = app.sync;
  if (!sync) return;
  checkFrozenWhileEnabled(sync.file, sync.runtimeState, sink);
  if (sync.type === 'flexible') {
    validateFlexibleSync(app, sink);
    validateSyncRoles(app, sink);
  }
  if (sync.type !== 'partition') return;
  const file = sync.file;
  if (sync.developmentModeEnabled && !sync.databaseName) {
    sink.at(file, ['development_mode_enabled'], 'error', 'sync/dev-mode-needs-database', 'Development mode needs "database_name": the database where synced object types are stored');
  }
  const partition = sync.partition;
  if (!partition?.key) return;
  if (partition.type === 'uuid') {
    sink.at(file, ['partition', 'type'], 'information', 'sync/partition-type-uuid', 'uuid partition keys work with current SDKs, though the product description lists only string, objectId and long');
  }
  const ds = app.dataSources.find((d) => d.name === sync.serviceName) ?? (sync.serviceName ? undefined : app.dataSources[0]);
  if (!ds) return;
  const schemas = ds.collections.filter((c) => isObject(c.schema?.value) && (!sync.developmentModeEnabled || !sync.databaseName || c.database === sync.databaseName));
  let withKey = 0;
  const mismatches: Array<{ declared: string; at: RelatedLocation }> = [];
  const expected = partition.type && Object.hasOwn(SCHEMA_TYPES_FOR_PARTITION, partition.type) ? SCHEMA_TYPES_FOR_PARTITION[partition.type] : undefined;
  for (const coll of schemas) {
    const schema = coll.schema!;
    const properties = isObject(schema.value) && isObject(schema.value.properties) ? schema.value.properties : {};
    const field = properties[partition.key];
    if (!isObject(field)) {
      // The custom user data is best left out of sync (see checkEscalationThroughSync): nothing to suggest.
      if (isCustomUserData(app, ds.name, coll)) continue;
      sink.at(schema, ['properties'], 'warning', 'sync/partition-key-not-in-schema',
        `${coll.database}.${coll.collection} has no "${partition.key}" property, so it is not synced; add the partition key to sync it`, { target: 'key', data: { key: partition.key, type: partition.type } });
      continue;
    }
    withKey++;
    const declared = ([] as unknown[]).concat(field.bsonType).filter((t): t is string => typeof t === 'string' && t !== 'null');
    if (expected && declared.length && !declared.every((t) => expected.includes(t))) {
      sink.at(schema, ['properties', partition.key, 'bsonType'], 'error', 'sync/partition-type-mismatch',
        `The partition key "${partition.key}" is ${declared.join('/')} here but sync/config.json says partition.type is "${partition.type}"; clients would fail to bind (ErrorIllegalDatabasePath)`,
        { data: { schemaType: declared[0], partitionType: partition.type } });
      const at = ['properties', partition.key, 'bsonType'];
      mismatches.push({ declared: declared.join('/'), at: { file: schema.path, range: schema.range(at), message: `"${partition.key}" is ${declared.join('/')} in ${coll.database}.${coll.collection}` } });
    }
  }
  // Whoever just changed partition.type looks here, not in the schemas: the mismatch is reported here too.
  if (mismatches.length > 0) {
    const kinds = [...new Set(mismatches.map((m) => m.declared))];
    const where = mismatches.map((m) => m.at.message.replace(/^"[^"]*" is /, '')).join('; ');
    sink.at(file, ['partition', 'type'], 'error', 'sync/partition-type-mismatch',
      `partition.type is "${partition.type}" but the partition key "${partition.key}" is ${where}; clients would fail to bind (ErrorIllegalDatabasePath)`,
      { data: kinds.length === 1 && !kinds[0]!.includes('/') ? { schemaType: kinds[0] } : {}, related: mismatches.map((m) => m.at) });
  }
  for (const coll of schemas) {
    const properties = isObject(coll.schema!.value) && isObject(coll.schema!.value.properties) ? coll.schema!.value.properties : {};
    const rules = coll.rules ?? ds.defaultRule;
    if (partition.key in properties && rules) checkPartitionKeyWrites(rules, partition.key, `${coll.database}.${coll.collection}`, sink);
  }
  checkEscalationThroughSync(app, ds.name, schemas.filter((c) => {
    const props = isObject(c.schema!.value) && isObject(c.schema!.value.properties) ? c.schema!.value.properties : {};
    return Object.hasOwn(props, partition.key!);
  }), partition.key, sink);
  if (schemas.length > 0 && withKey === 0) {
    sink.at(file, ['partition', 'key'], 'error', 'sync/partition-key-missing', `No collection schema of "${ds.name}" defines the partition key "${partition.key}"; nothing would sync`);
  }
}

/**
 * Sync writes are checked against the sync write permission only, never against the collections' rules
 * (rules-and-sync §4). So whatever the rules protect from clients can be rewritten by anyone who may
 * write a partition holding the document: the custom user data (which `%%user.custom_data` reads, in
 * rules and in the sync permissions themselves), and fields the rules both grant access by and keep
 * read-only. Each such synced collection is a way to escalate privileges, reported at the write permission.
 */
function checkEscalationThroughSync(app: AppModel, serviceName: string, synced: Collection[], key: string, sink: DiagnosticSink): void {
  const sync = app.sync!;
  const write = isObject(sync.file.value) && isObject(sync.file.value.partition) && isObject(sync.file.value.partition.permissions)
    ? sync.file.value.partition.permissions.write : undefined;
  if (write === undefined || write === false) return;
  const at = ['partition', 'permissions', 'write'];
  const cud = app.customUserData;
  for (const coll of synced) {
    const namespace = `${coll.database}.${coll.collection}`;
    const schema = coll.schema!;
    const keyAt: RelatedLocation = { file: schema.path, range: schema.range(['properties', key]), message: `${namespace} is synced: its schema has the partition key "${key}"` };
    if (cud && isCustomUserData(app, serviceName, coll)) {
      const used = customDataFieldsUsed(app);
      sink.at(sync.file, at, 'warning', 'sync/writable-custom-user-data',
        `${namespace} holds the custom user data and is synced, and sync writes bypass its rules: a user who can write the partition holding her own user document can change ${used.length ? used.map((f) => `"${f}"`).join(', ') : 'its fields'}, which ${used.length ? 'the app\'s rules and sync permissions read as %%user.custom_data to grant access' : 'becomes her %%user.custom_data'} (e.g. make herself admin); keep the custom user data out of sync (remove "${key}" from its schema) or in partitions no user may write`,
        { related: [keyAt, { file: cud.source.file.path, range: cud.source.file.range([...cud.source.path, 'collection_name']), message: 'the custom user data collection' }], data: { collection: namespace, fields: used } });
      continue;
    }
    for (const { field, role } of protectedAccessFields(coll, key)) {
      sink.at(sync.file, at, 'warning', 'sync/writable-access-field',
        `The rules of ${namespace} grant access by "${field}" and keep role "${role}" from writing it, but sync writes bypass rules: a user who can write a partition holding ${namespace} documents can change "${field}" through sync and gain the access it grants`,
        { related: [keyAt, { file: coll.rules!.path, range: coll.rules!.range(['roles']), message: `the rules of ${namespace}` }], data: { collection: namespace, field } });
    }
  }
}

function isCustomUserData(app: AppModel, serviceName: string, coll: Collection): boolean {
  const cud = app.customUserData;
  return Boolean(cud?.enabled && cud.serviceName === serviceName && cud.databaseName === coll.database && cud.collectionName === coll.collection);
}

const CUSTOM_DATA_REF = /^%%user\.custom_data\.([^.]+)/;

/** Fields of the custom user data that rules (every collection's, and the default rule) and the sync permissions read. */
function customDataFieldsUsed(app: AppModel): string[] {
  const found = new Set<string>();
  const files: JsonFile[] = [app.sync!.file];
  for (const ds of app.dataSources) {
    if (ds.defaultRule) files.push(ds.defaultRule);
    for (const c of ds.collections) if (c.rules) files.push(c.rules);
  }
  const walk = (value: unknown, depth: number): void => {
    if (depth > 64) return;
    if (typeof value === 'string') {
      const m = CUSTOM_DATA_REF.exec(value);
      if (m) found.add(m[1]!);
    } else if (Array.isArray(value)) for (const v of value) walk(v, depth + 1);
    else if (isObject(value)) for (const [k, v] of Object.entries(value)) { walk(k, depth + 1); walk(v, depth + 1); }
  };
  for (const f of files) walk(f.value, 0);
  return [...found].sort();
}

/**
 * Fields a collection's rules grant access by (keys of `apply_when` and `document_filters` expressions,
 * `%%root.<field>` references) that some role may not write (a field rule that is not `true`).
 * The partition key and `_id` are left out: sync refuses changes of both.
 */
function protectedAccessFields(coll: Collection, key: string): { field: string; role: string }[] {
  const rules = coll.rules?.value;
  const roles = isObject(rules) && Array.isArray(rules.roles) ? rules.roles.filter(isObject) : [];
  const access = new Set<string>();
  const collect = (value: unknown, depth: number): void => {
    if (depth > 64) return;
    if (typeof value === 'string') {
      const m = /^%%(?:root|prevRoot)\.([^.]+)/.exec(value);
      if (m) access.add(m[1]!);
    } else if (Array.isArray(value)) for (const v of value) collect(v, depth + 1);
    else if (isObject(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (!k.startsWith('%') && !k.startsWith('$')) access.add(k.split('.')[0]!);
        collect(k, depth + 1);
        collect(v, depth + 1);
      }
    }
  };
  for (const role of roles) {
    collect(role.apply_when, 0);
    if (isObject(role.document_filters)) { collect(role.document_filters.read, 0); collect(role.document_filters.write, 0); }
  }
  access.delete(key);
  access.delete('_id');
  const out: { field: string; role: string }[] = [];
  for (const field of [...access].sort()) {
    const role = roles.find((r) => {
      const rule = isObject(r.fields) ? r.fields[field] : undefined;
      return isObject(rule) && rule.write !== undefined && rule.write !== true;
    });
    if (role) out.push({ field, role: typeof role.name === 'string' ? role.name : '?' });
  }
  return out;
}

/**
 * Clients must not change a document's partition key: a change moves the document to another partition
 * behind the backs of the synced clients of both (rules-and-sync §3). Every role that could write it is told.
 */
function checkPartitionKeyWrites(rules: JsonFile, key: string, namespace: string, sink: DiagnosticSink): void {
  const roles = isObject(rules.value) && Array.isArray(rules.value.roles) ? rules.value.roles : [];
  roles.forEach((role, i) => {
    if (!isObject(role)) return;
    const where = fieldWriteRule(role, key);
    if (!where) return;
    const name = typeof role.name === 'string' ? role.name : `#${i + 1}`;
    sink.at(rules, ['roles', i, ...where], 'warning', 'sync/partition-key-writable',
      `Role "${name}" lets clients change the partition key "${key}" of ${namespace} documents, which moves them between partitions under synced clients; let it be set only on insert: "fields": {"${key}": {"read": true, "write": {"%%prevRoot": {"$exists": false}}}}`,
      { data: { key, role: i } });
  });
}

/** The JSON path (inside the role) of the permission that makes `field` writable, or undefined when it is not. */
function fieldWriteRule(role: Record<string, unknown>, field: string): (string | number)[] | undefined {
  const fields = isObject(role.fields) ? role.fields : {};
  const own = fields[field];
  // A field-level expression is taken as deliberate (it may allow the key only on insert, say).
  if (isObject(own) && own.write !== undefined) return own.write === true ? ['fields', field, 'write'] : undefined;
  const additional = isObject(role.additional_fields) ? role.additional_fields : undefined;
  if (!isObject(own) && additional && additional.write !== undefined) return additional.write === true ? ['additional_fields', 'write'] : undefined;
  return role.write !== undefined && role.write !== false ? ['write'] : undefined;
}

/**
 * While the local runtime runs sync (enabled or paused), it keeps the key and rules it enabled with and
 * refuses edits of them; the error sits at each changed value. A config asking to terminate (`state: ""`)
 * may change them.
 */
function checkFrozenWhileEnabled(file: JsonFile, runtimeState: unknown, sink: DiagnosticSink): void {
  if (!isObject(runtimeState) || (runtimeState.status !== 'enabled' && runtimeState.status !== 'paused')) return;
  const running = isObject(runtimeState.running) && isObject(runtimeState.running.frozen) ? runtimeState.running.frozen as unknown as FrozenSettings : undefined;
  const parsed = syncSettingsFromFile(file.value);
  if (!running || !parsed.ok || parsed.settings.state === '' || parsed.settings.type !== 'partition') return;
  const changed = frozenChanges(running, parsed.settings);
  for (const where of changed) {
    sink.at(file, where, 'error', 'sync/frozen-while-enabled', `${frozenMessage([where])}; the local runtime still runs ${JSON.stringify(frozenValue(running, where))}`);
  }
}

function frozenValue(frozen: FrozenSettings, where: string[]): unknown {
  switch (where[where.length - 1]) {
    case 'key': return frozen.key;
    case 'type': return frozen.type;
    case 'required': return frozen.required;
    case 'read': return frozen.read;
    case 'write': return frozen.write;
    default: return frozen;
  }
}
