// The editor's local-only sync routes, on the admin route table (behind the admin session):
// `GET /api/admin/v3.0/local/app/<client app id>/sync/simulate?user=<id|email>&partition=<EJSON text>`
// answers the simulator's report as canonical EJSON; `…/sync/status` the state machine's state with the live
// Realm protocol sessions; `…/sync/sessions` those sessions alone; `…/sync/sessions/<connection>/<session>/traffic`
// a session's recent messages decoded (changesets per object, the BIND verdicts with their traces);
// `…/sync/schema-versions` the flexible sync schema's numbered versions with the breaking changes that made them;
// `GET …/sync/migration` the partition → flexible migration's status, `POST …/sync/migration` with
// `{"to": "flexible" | "partition"}` a step of it (`asl sync migrate`).
import { LOCAL_APP_ROUTES, localAppPattern } from '../../core/apiRoutes';
import type { SyncSchemaVersionsReply, SyncSessionsReply, SyncStatusReply, SyncTrafficReply } from '../../core/sync/messages';
import type { AdminRouteTable } from '../admin/table';
import { ApiError, badRequest } from '../http/errors';
import type { HttpRequest } from '../http/server';
import { MigrationError } from './migration/migration';
import { reportToJson } from './simulate';
import type { RuntimeSync } from './index';

export function registerSyncLocalRoutes(table: AdminRouteTable, syncOf: (clientAppId: string) => RuntimeSync | undefined): void {
  const sync = (req: HttpRequest): RuntimeSync => {
    const found = syncOf(req.params.appId!);
    if (!found) throw new ApiError(404, 'AppNotFound', `cannot find app using Client App ID '${req.params.appId}'`);
    return found;
  };
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncSimulate), async (req) => {
    const user = req.query.get('user');
    const partition = req.query.get('partition');
    if (!user || partition === null) throw badRequest('give ?user=<id or email>&partition=<partition value as EJSON text>');
    const report = await sync(req).simulate(user, partition);
    return { text: reportToJson(report), contentType: 'application/json' };
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncStatus), (req) => {
    const found = sync(req);
    const reply: SyncStatusReply = { ...found.service.status(), liveSessions: found.sessions(), migration: found.migration.status() };
    return { body: reply, encoding: 'json' };
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncMigration), (req) => ({ body: sync(req).migration.status(), encoding: 'json' }));
  table.post(localAppPattern(LOCAL_APP_ROUTES.syncMigration), async (req) => {
    const found = sync(req);
    let to: unknown;
    try {
      to = (JSON.parse(await req.text()) as { to?: unknown }).to;
    } catch {
      to = undefined;
    }
    if (to !== 'flexible' && to !== 'partition') throw badRequest('expected {"to": "flexible" | "partition"}');
    try {
      return { body: await (to === 'flexible' ? found.migration.start() : found.migration.rollback()), encoding: 'json' };
    } catch (e) {
      if (e instanceof MigrationError) throw new ApiError(e.status, e.errorCode, e.message);
      throw e;
    }
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncSchemaVersions), (req) => {
    const versions = sync(req).schemaVersions;
    const reply: SyncSchemaVersionsReply = { latest: versions.latest, versions: versions.list() };
    return { body: reply, encoding: 'json' };
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncSessions), (req) => {
    const reply: SyncSessionsReply = { sessions: sync(req).sessions() };
    return { body: reply, encoding: 'json' };
  });
  table.get(localAppPattern(LOCAL_APP_ROUTES.syncTraffic), (req) => {
    const traffic = sync(req).traffic(req.params.connection!, Number(req.params.session));
    if (!traffic) throw new ApiError(404, 'SessionNotFound', `no sync session ${req.params.session} on connection ${req.params.connection}`);
    const reply: SyncTrafficReply = { traffic };
    return { body: reply, encoding: 'json' };
  });
}
