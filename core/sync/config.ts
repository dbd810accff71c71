// Partition-based sync configuration as the runtime holds it (rules-and-sync §2, §10): one shape for the
// file form (`sync/config.json`, with `service_name` and `last_disabled`) and the admin form (the `sync`
// object of the data source's service configuration, without them).
import { isPlainObject } from '../rules/bsonValues';

export const PARTITION_KEY_TYPES = ['string', 'objectId', 'long', 'uuid'] as const;
export type PartitionKeyType = (typeof PARTITION_KEY_TYPES)[number];

/** `enabled`, `disabled` (paused), `` (terminated or never enabled). */
export type SyncConfigState = 'enabled' | 'disabled' | '';

export interface PartitionSettings {
  key: string;
  type: string;
  required: boolean;
  permissions: { read?: unknown; write?: unknown };
}

export interface SyncSettings {
  /** `partition` or `flexible`. */
  type: string;
  state: SyncConfigState;
  developmentModeEnabled: boolean;
  serviceName?: string;
  databaseName?: string;
  partition?: PartitionSettings;
  clientMaxOfflineDays?: number;
  isRecoveryModeDisabled: boolean;
  lastDisabled?: number;
  /** Flexible sync: the queryable fields as the file names them (what `compileSubscription` checks against). */
  queryable?: QueryableFields;
  /**
   * Flexible sync: the object types clients only insert into (data ingest), `asymmetric_tables`. The
   * server's schema holds them as asymmetric; a client cannot make another table asymmetric outside
   * development mode, where its declaration is written here.
   */
  asymmetricTables?: string[];
}

/** Flexible sync's queryable fields, in the file form's names. */
export interface QueryableFields {
  queryable_fields_names?: string[];
  indexed_queryable_fields_names?: string[];
  collection_queryable_fields_names?: Record<string, string[]>;
}

const QUERYABLE_KEYS = ['queryable_fields_names', 'indexed_queryable_fields_names'] as const;

export type ParsedSettings = { ok: true; settings: SyncSettings } | { ok: false; message: string };

/** `sync/config.json` as written by the platform CLI. */
export function syncSettingsFromFile(value: unknown): ParsedSettings {
  return parse(value, 'sync/config.json', true);
}

/** The `sync` object of a PATCH of the service configuration; `serviceName` is the service patched. */
export function syncSettingsFromAdmin(value: unknown, serviceName: string): ParsedSettings {
  const parsed = parse(value, 'sync', false);
  if (parsed.ok) parsed.settings.serviceName = serviceName;
  return parsed;
}

function parse(value: unknown, where: string, fileForm: boolean): ParsedSettings {
  if (!isPlainObject(value)) return { ok: false, message: `${where} must be an object` };
  const type = value.type ?? 'partition';
  if (type !== 'partition' && type !== 'flexible') return { ok: false, message: `${where}.type must be "partition" or "flexible", not ${JSON.stringify(type)}` };
  const state = value.state ?? '';
  if (state !== 'enabled' && state !== 'disabled' && state !== '') return { ok: false, message: `${where}.state must be "enabled", "disabled" or "", not ${JSON.stringify(state)}` };
  for (const field of ['development_mode_enabled', 'is_recovery_mode_disabled'] as const) {
    if (value[field] !== undefined && typeof value[field] !== 'boolean') return { ok: false, message: `${where}.${field} must be true or false` };
  }
  for (const field of ['database_name', ...(fileForm ? ['service_name'] : [])]) {
    if (value[field] !== undefined && typeof value[field] !== 'string') return { ok: false, message: `${where}.${field} must be a string` };
  }
  if (value.client_max_offline_days !== undefined && typeof value.client_max_offline_days !== 'number') return { ok: false, message: `${where}.client_max_offline_days must be a number of days` };
  const queryable: QueryableFields = {};
  for (const field of QUERYABLE_KEYS) {
    const names = value[field];
    if (names === undefined) continue;
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) return { ok: false, message: `${where}.${field} must be an array of field names` };
    queryable[field] = names as string[];
  }
  if (value.collection_queryable_fields_names !== undefined) {
    const byCollection = value.collection_queryable_fields_names;
    if (!isPlainObject(byCollection) || !Object.values(byCollection).every((v) => Array.isArray(v) && v.every((n) => typeof n === 'string'))) {
      return { ok: false, message: `${where}.collection_queryable_fields_names must map collection names to arrays of field names` };
    }
    queryable.collection_queryable_fields_names = byCollection as Record<string, string[]>;
  }
  const asymmetric = value.asymmetric_tables;
  if (asymmetric !== undefined && (!Array.isArray(asymmetric) || !asymmetric.every((n) => typeof n === 'string'))) {
    return { ok: false, message: `${where}.asymmetric_tables must be an array of object type names` };
  }
  let partition: PartitionSettings | undefined;
  if (value.partition !== undefined) {
    const p = value.partition;
    if (!isPlainObject(p)) return { ok: false, message: `${where}.partition must be an object` };
    if (p.key !== undefined && typeof p.key !== 'string') return { ok: false, message: `${where}.partition.key must be a string` };
    if (p.type !== undefined && typeof p.type !== 'string') return { ok: false, message: `${where}.partition.type must be a string` };
    if (p.required !== undefined && typeof p.required !== 'boolean') return { ok: false, message: `${where}.partition.required must be true or false` };
    const permissions = isPlainObject(p.permissions) ? p.permissions : {};
    partition = {
      key: (p.key as string | undefined) ?? '', type: (p.type as string | undefined) ?? '', required: (p.required as boolean | undefined) ?? false,
      permissions: { read: permissions.read, write: permissions.write },
    };
  }
  const settings: SyncSettings = {
    type,
    state,
    developmentModeEnabled: (value.development_mode_enabled as boolean | undefined) ?? false,
    ...(typeof value.database_name === 'string' ? { databaseName: value.database_name } : {}),
    ...(fileForm && typeof value.service_name === 'string' ? { serviceName: value.service_name } : {}),
    ...(partition ? { partition } : {}),
    ...(typeof value.client_max_offline_days === 'number' ? { clientMaxOfflineDays: value.client_max_offline_days } : {}),
    isRecoveryModeDisabled: (value.is_recovery_mode_disabled as boolean | undefined) ?? false,
    ...(fileForm && typeof value.last_disabled === 'number' ? { lastDisabled: value.last_disabled } : {}),
    ...(type === 'flexible' ? { queryable } : {}),
    ...(type === 'flexible' && asymmetric !== undefined ? { asymmetricTables: asymmetric as string[] } : {}),
  };
  return { ok: true, settings };
}

/** The admin form: the §2 fields without `service_name` and `last_disabled`. */
export function syncSettingsToAdmin(settings: SyncSettings): Record<string, unknown> {
  const { service_name: _service, last_disabled: _last, ...rest } = syncSettingsToFile(settings);
  return rest;
}

/** The file form, key order as the platform CLI writes it. */
export function syncSettingsToFile(settings: SyncSettings): Record<string, unknown> {
  return {
    type: settings.type,
    state: settings.state,
    development_mode_enabled: settings.developmentModeEnabled,
    ...(settings.serviceName !== undefined ? { service_name: settings.serviceName } : {}),
    ...(settings.databaseName !== undefined ? { database_name: settings.databaseName } : {}),
    ...(settings.partition ? {
      partition: {
        key: settings.partition.key, type: settings.partition.type, required: settings.partition.required,
        permissions: { read: settings.partition.permissions.read, write: settings.partition.permissions.write },
      },
    } : {}),
    ...(settings.lastDisabled !== undefined ? { last_disabled: settings.lastDisabled } : {}),
    ...(settings.clientMaxOfflineDays !== undefined ? { client_max_offline_days: settings.clientMaxOfflineDays } : {}),
    is_recovery_mode_disabled: settings.isRecoveryModeDisabled,
    ...settings.queryable,
    ...(settings.asymmetricTables !== undefined ? { asymmetric_tables: settings.asymmetricTables } : {}),
  };
}

/**
 * Why sync cannot be enabled with these settings, or undefined: a linked cluster; partition-based sync
 * also needs a key, its type and both permissions (§9); flexible sync's permissions are the collections' rules.
 */
export function enableProblem(settings: SyncSettings, clusterNames: readonly string[]): string | undefined {
  const cluster = settings.serviceName;
  if (!cluster) return 'sync needs a linked cluster: set "service_name"';
  if (!clusterNames.includes(cluster)) return `sync needs a linked cluster: no data source named "${cluster}" (have ${clusterNames.map((n) => `"${n}"`).join(', ') || 'none'})`;
  if (settings.type === 'flexible') return undefined;
  const p = settings.partition;
  if (!p?.key) return 'sync needs a partition key: set "partition.key"';
  if (!(PARTITION_KEY_TYPES as readonly string[]).includes(p.type)) return `"partition.type" must be one of ${PARTITION_KEY_TYPES.join(', ')}, not ${JSON.stringify(p.type)}`;
  if (p.permissions.read === undefined) return 'sync needs a read permission: set "partition.permissions.read"';
  if (p.permissions.write === undefined) return 'sync needs a write permission: set "partition.permissions.write"';
  return undefined;
}

/** The settings that cannot change while sync is enabled or paused (§9): key, type, required and rules. */
export interface FrozenSettings {
  key: string;
  type: string;
  required: boolean;
  read: unknown;
  write: unknown;
}

/** Flexible sync has no partition key or sync-level permissions: nothing of it is frozen but its mode. */
export const FLEXIBLE_FROZEN: FrozenSettings = { key: '', type: '', required: false, read: undefined, write: undefined };

export function frozenPart(settings: SyncSettings): FrozenSettings | undefined {
  if (settings.type === 'flexible') return FLEXIBLE_FROZEN;
  const p = settings.partition;
  return p ? { key: p.key, type: p.type, required: p.required, read: p.permissions.read, write: p.permissions.write } : undefined;
}

/** The JSON paths (in the file form) whose values differ from the frozen ones. */
export function frozenChanges(frozen: FrozenSettings, settings: SyncSettings): string[][] {
  const now = frozenPart(settings);
  if (!now) return [['partition']];
  const changed: string[][] = [];
  if (now.key !== frozen.key) changed.push(['partition', 'key']);
  if (now.type !== frozen.type) changed.push(['partition', 'type']);
  if (now.required !== frozen.required) changed.push(['partition', 'required']);
  if (!sameJson(now.read, frozen.read)) changed.push(['partition', 'permissions', 'read']);
  if (!sameJson(now.write, frozen.write)) changed.push(['partition', 'permissions', 'write']);
  return changed;
}

/** Deep equality of JSON values, key order ignored. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
  }
  return false;
}
