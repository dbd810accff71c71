// The admin side of sync (rules-and-sync §10), as functions the Admin API routes call: the `sync` object
// of the data source's service configuration (GET shape; PATCH through the state machine: deploy, pause,
// resume, terminate, re-enable) and `GET …/sync/data` (valid partition keys). A PATCH goes to
// `sync/config.json` first and comes back through the runtime's reload, like every change.
import { isClusterSource, type AppModel } from '../../core/model';
import { isObject } from '../../core/json';
import {
  partitionFields, reconcileSync, syncSettingsFromAdmin, syncSettingsFromFile, syncSettingsToAdmin,
  type PartitionField, type SyncSettings,
} from '../../core/sync';
import { readSyncConfigFile, writeSyncConfigFile } from './files';
import type { SyncService } from './service';

/** A refused admin request: the route answers `status` with `{error, error_code}`. */
export class SyncAdminError extends Error {
  constructor(readonly status: number, readonly errorCode: string, message: string) {
    super(message);
  }
}

export interface SyncAdminHost {
  appDir: string;
  app(): AppModel;
  service: SyncService;
  /** Reloads the app's files into the runtime (the state machine applies what was written). */
  reload(): Promise<unknown>;
  /** Unix seconds. */
  now(): number;
}

/** The `sync` object of the service configuration of `serviceName`, or undefined when that service does not sync. */
export function getServiceSyncConfig(host: SyncAdminHost, serviceName: string): Record<string, unknown> | undefined {
  const settings = fileSettings(host);
  if (!settings || settings.type !== 'partition') return undefined;
  if ((settings.serviceName ?? defaultCluster(host.app())) !== serviceName) return undefined;
  return syncSettingsToAdmin(settings);
}

/** The `flexible_sync` object for a flexible config of that service. */
export function getServiceFlexibleSyncConfig(host: SyncAdminHost, serviceName: string): Record<string, unknown> | undefined {
  const value = readSyncConfigFile(host.appDir);
  if (!isObject(value) || value.type !== 'flexible' || (value.service_name ?? defaultCluster(host.app())) !== serviceName) return undefined;
  const { service_name: _s, last_disabled: _l, ...rest } = value;
  return rest;
}

/**
 * PATCH of the service configuration with `{"sync": {…}}` (partition-based) or `{"flexible_sync": {…}}`:
 * checked by the state machine first (a change of key or rules while enabled is refused with 400 saying
 * to terminate first), then written and reloaded. Returns the transition that happened, if any.
 */
export async function patchServiceSyncConfig(host: SyncAdminHost, serviceName: string, body: unknown): Promise<{ transition?: string; notice?: string }> {
  if (!isObject(body) || (body.sync === undefined && body.flexible_sync === undefined)) return {};
  if (body.sync !== undefined && body.flexible_sync !== undefined) throw new SyncAdminError(400, 'InvalidParameter', 'a service syncs in one mode: send "sync" or "flexible_sync", not both');
  const cluster = host.app().dataSources.find((d) => d.name === serviceName);
  if (!cluster || !isClusterSource(cluster)) throw new SyncAdminError(400, 'InvalidParameter', `service "${serviceName}" is not a linked cluster; only a cluster can be synced`);
  const requested = body.sync !== undefined ? body.sync : isObject(body.flexible_sync) ? { ...body.flexible_sync, type: 'flexible' } : body.flexible_sync;
  if (isObject(requested) && body.sync !== undefined && requested.type === 'flexible') throw new SyncAdminError(400, 'InvalidParameter', 'flexible sync is configured as "flexible_sync"');
  const parsed = syncSettingsFromAdmin(requested, serviceName);
  if (!parsed.ok) throw new SyncAdminError(400, 'InvalidParameter', parsed.message);
  const now = host.now();
  const previous = fileSettings(host);
  const settings: SyncSettings = { ...parsed.settings };
  // A PATCH names what it changes: development mode and what clients added in it stay unless sent.
  if (previous && isObject(requested)) {
    if (requested.development_mode_enabled === undefined) settings.developmentModeEnabled = previous.developmentModeEnabled;
    if (settings.type === 'flexible' && previous.type === 'flexible') {
      settings.queryable = { ...previous.queryable, ...settings.queryable };
      if (requested.asymmetric_tables === undefined && previous.asymmetricTables) settings.asymmetricTables = previous.asymmetricTables;
    }
  }
  if (settings.state === 'disabled' && previous?.state !== 'disabled') settings.lastDisabled = now;
  else if (settings.state === '' && previous?.state) settings.lastDisabled = now;
  else if (previous?.lastDisabled !== undefined) settings.lastDisabled = previous.lastDisabled;
  const clusters = host.app().dataSources.filter(isClusterSource).map((d) => d.name);
  const dryRun = reconcileSync(host.service.runtimeState, settings, clusters, now);
  if (dryRun.refused) throw new SyncAdminError(400, 'InvalidSyncConfig', dryRun.refused.message);
  writeSyncConfigFile(host.appDir, settings);
  await host.reload();
  return { ...(dryRun.transition ? { transition: dryRun.transition } : {}), ...(dryRun.notice ? { notice: dryRun.notice } : {}) };
}

/** `GET …/sync/data?service_id=`: the fields that can be the partition key of that cluster. */
export function syncData(host: SyncAdminHost, serviceId: string, serviceName: string): { service_id: string; partition_fields: PartitionField[] } {
  const app = host.app();
  const ds = app.dataSources.find((d) => d.name === serviceName);
  if (!ds || !isClusterSource(ds)) throw new SyncAdminError(404, 'ServiceNotFound', `service ${serviceId} is not a linked cluster`);
  const settings = fileSettings(host);
  if (settings?.type === 'flexible') return { service_id: serviceId, partition_fields: [] };
  const schemas = ds.collections.map((c) => c.schema?.value).filter((v) => v !== undefined);
  return { service_id: serviceId, partition_fields: partitionFields(schemas) };
}

function fileSettings(host: SyncAdminHost): SyncSettings | undefined {
  const value = readSyncConfigFile(host.appDir);
  if (value === undefined) return undefined;
  const parsed = syncSettingsFromFile(value);
  return parsed.ok ? parsed.settings : undefined;
}

function defaultCluster(app: AppModel): string | undefined {
  return app.dataSources.find(isClusterSource)?.name;
}
