// The Realm sync endpoint: the WebSocket upgrade at `/api/client/v2.0/app/<app id>/realm-sync` (the
// `ws_hostname` of the location answer), authenticated by the access token in `baas_at` (or an
// Authorization header), with one `com.mongodb.realm-sync#N` subprotocol chosen from those offered.
// An invalid or expired token is answered 401, which makes a Realm SDK refresh its token and reconnect;
// no common protocol version is answered without a subprotocol, which the SDK reports as a failed negotiation.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EvaluationUser } from '../../../core/rules';
import type { SyncError } from '../../../core/sync';
import type { SyncSessionInfo, SyncTrafficEntry } from '../../../core/sync/messages';
import type { Logger } from '../../http/server';
import { negotiate, type NegotiatedProtocol } from '../wire/negotiate';
import { encodeServerMessage } from '../wire/messages';
import { RealmSyncConnection, type SyncActivityObserver } from './connection';
import type { RealmSyncEngine } from './engine';
import type { SyncSchemaVersions } from '../schema-versions/versions';

export const REALM_SYNC_PATH = /^\/api\/client\/v2\.0\/app\/([^/]+)\/realm-sync$/;
/** The endpoint's path below `/api/client/v2.0/app/<client app id>/` (see `OpenedApp.upgrades`). */
export const REALM_SYNC_ENDPOINT = 'realm-sync';
/**
 * Frames larger than this close the connection with 1009, as the platform's did (16 MiB; realm-core then
 * asks its user for a client reset). An UPLOAD's body is at most CLIENT_MESSAGE_LIMITS.maxBodySize, less its head.
 */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** The close reason of an oversized frame, in the platform's words (realm-core shows it to the user). */
const FRAME_TOO_LARGE = `read limited at ${MAX_FRAME_BYTES + 1} bytes`;

/** `ws` closes an oversized frame's connection with 1009 and no reason: give it the platform's reason. */
function explainOversizedFrames(ws: WebSocket): void {
  const close = ws.close.bind(ws);
  ws.close = (code?: number, reason?: string | Buffer) => close(code, code === 1009 && reason === undefined ? FRAME_TOO_LARGE : reason);
}

export interface RealmSyncEndpointOptions {
  appId: string;
  engine: RealmSyncEngine;
  /** The user of an access token, with when the token expires and the login (refresh session) it rests on; throws when the token is not valid. */
  authenticate(token: string): Promise<{ user: EvaluationUser; expiresAt?: number; loginSessionId?: string }>;
  log: Logger;
  now?: () => number;
  /** Told of every connection's uploads, downloads and bootstraps (metrics). */
  observer?: SyncActivityObserver;
  /** Flexible sync: the app's sync schema versions. */
  schemaVersions?: SyncSchemaVersions;
  /** Takes a connection of the other sync kind while a migration holds (`../migration`); false: refused with 113/114. */
  answerOtherKind?(ws: WebSocket, protocol: NegotiatedProtocol, user: EvaluationUser): boolean;
}

export interface RealmSyncEndpoint {
  /** Takes an HTTP upgrade for the endpoint's path; false when the path is not the endpoint's. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** The live sessions of every connection. */
  sessions(): SyncSessionInfo[];
  /** The recent traffic of a session, decoded; undefined when there is no such session. */
  traffic(connection: string, session: number): SyncTrafficEntry[] | undefined;
  /** Ends the sessions `match` selects with a session error (a user revoked, sync paused or terminated). */
  endSessions(match: (session: SyncSessionInfo) => boolean, error: SyncError): void;
  /** Ends the connections that rest on a revoked login (refresh session), or all of a disabled or deleted user's. */
  endForAccount(match: { loginSessionId: string } | { userId: string }, reason: string): void;
  /**
   * The runtime is stopping: new upgrades are refused (503), every live session gets `error` (try again)
   * and its connection closes with 1001. Returns how many connections were told.
   */
  drain(error: SyncError): number;
  /** Live connections and, by connection, their live sessions (metrics). */
  counts(): { connections: number; sessions: number };
  close(): void;
}

function reject(socket: Duplex, status: number, reason: string, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
}

/**
 * JSON_ERROR 113 (switch_to_flx_sync) or 114 (switch_to_pbs) for the connection, then the close: the client
 * reports WrongSyncType, an application bug, and does not retry.
 */
export function refuseOtherKind(ws: WebSocket, protocol: NegotiatedProtocol, appIsFlexible: boolean): void {
  const message = appIsFlexible
    ? 'Client connected using partition-based sync to an app that uses flexible sync: open the realm with a flexible sync configuration'
    : 'Client connected using flexible sync to an app that uses partition-based sync: open the realm with a partition value';
  ws.send(encodeServerMessage({
    type: 'json_error', errorCode: appIsFlexible ? 113 : 114, session: 0,
    body: { message, tryAgain: false, action: 'ApplicationBug', shouldClientReset: false, isRecoveryModeDisabled: false, logURL: '' },
  }, protocol.version));
  setTimeout(() => ws.terminate(), 1000).unref();
}

export function createRealmSyncEndpoint(options: RealmSyncEndpointOptions): RealmSyncEndpoint {
  const negotiated = new WeakMap<IncomingMessage, NegotiatedProtocol>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    handleProtocols: (_offered, req) => negotiated.get(req)?.protocol ?? false,
  });
  // Each accepted connection gets a request id in the upgrade response, as the platform sent it: clients
  // log it ("Connected to app services with request id") and prefix the connection's log lines with it.
  wss.on('headers', (headers) => { headers.push(`X-Appservices-Request-Id: ${randomBytes(12).toString('hex')}`); });
  const connections = new Set<RealmSyncConnection>();
  /** Connections of the other sync kind a migration answers: cut when the runtime stops. */
  const otherKindSockets = new Set<WebSocket>();
  let draining = false;
  return {
    handleUpgrade(req, socket, head) {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const m = REALM_SYNC_PATH.exec(url.pathname);
      if (!m) return false;
      if (decodeURIComponent(m[1]!) !== options.appId) return false;
      if (draining) {
        reject(socket, 503, 'Service Unavailable', { error: 'the server is shutting down; try again later', error_code: 'ServiceUnavailable' });
        return true;
      }
      const bearer = typeof req.headers.authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization)?.[1] : undefined;
      const token = url.searchParams.get('baas_at') ?? bearer;
      if (!token) {
        reject(socket, 401, 'Unauthorized', { error: 'the sync connection needs an access token (baas_at or Authorization: Bearer)', error_code: 'InvalidSession' });
        return true;
      }
      // A flexible app speaks com.mongodb.realm-query-sync, a partition app com.mongodb.realm-sync.
      const flexible = options.engine.service.flexible;
      const offered = req.headers['sec-websocket-protocol'];
      const protocol = negotiate(offered, { accept: { partition: !flexible, flexible } });
      // A client of the other sync kind is answered in its own protocol with the error that says so.
      const otherKind = protocol ? null : negotiate(offered, { accept: { partition: flexible, flexible: !flexible } });
      const answered = protocol ?? otherKind;
      if (answered) negotiated.set(req, answered);
      socket.on('error', () => undefined);
      options.authenticate(token).then(({ user, expiresAt, loginSessionId }) => {
        if (socket.destroyed) return;
        if (draining) {
          reject(socket, 503, 'Service Unavailable', { error: 'the server is shutting down; try again later', error_code: 'ServiceUnavailable' });
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          explainOversizedFrames(ws);
          if (otherKind && options.answerOtherKind?.(ws, otherKind, user)) {
            otherKindSockets.add(ws);
            ws.on('close', () => otherKindSockets.delete(ws));
            return;
          }
          if (otherKind) {
            options.log.warn(`sync: user ${user.id} connected with ${flexible ? 'partition-based' : 'flexible'} sync to an app that uses ${flexible ? 'flexible' : 'partition-based'} sync`);
            refuseOtherKind(ws, otherKind, flexible);
            return;
          }
          if (!protocol) {
            options.log.warn(`sync: user ${user.id} offered no protocol this server speaks (${String(req.headers['sec-websocket-protocol'] ?? 'none')})`);
            ws.close(1002, 'no common sync protocol version');
            return;
          }
          const connection = new RealmSyncConnection(ws, { user, protocolVersion: protocol.version, flexible: protocol.flexible, remote: req.socket.remoteAddress ?? '', ...(expiresAt !== undefined ? { expiresAt } : {}), ...(loginSessionId ? { loginSessionId } : {}) }, {
            engine: options.engine, log: options.log, ...(options.now ? { now: options.now } : {}), ...(options.observer ? { observer: options.observer } : {}), ...(options.schemaVersions ? { schemaVersions: options.schemaVersions } : {}),
          }, (closed) => connections.delete(closed));
          connections.add(connection);
          options.log.info(`sync: user ${user.id} connected (${protocol.protocol}, connection ${connection.id})`);
        });
      }, (e: Error) => {
        options.log.info(`sync: connection refused: ${e.message}`);
        reject(socket, 401, 'Unauthorized', { error: 'invalid session: the access token is invalid or expired', error_code: 'InvalidSession' });
      });
      return true;
    },
    sessions: () => [...connections].flatMap((c) => c.sessionInfos()),
    traffic: (id, session) => [...connections].find((c) => c.id === id)?.traffic(session),
    endSessions(match, error) {
      for (const connection of connections) connection.endSessions(match, error);
    },
    endForAccount(match, reason) {
      for (const connection of [...connections]) {
        const selected = 'userId' in match ? connection.info.user.id === match.userId : connection.info.loginSessionId === match.loginSessionId;
        if (selected) connection.endForAccount('forbidden', reason);
      }
    },
    drain(error) {
      draining = true;
      const told = connections.size;
      for (const connection of [...connections]) connection.goAway(error);
      for (const ws of otherKindSockets) ws.close(1001, 'the server is shutting down');
      return told;
    },
    counts: () => {
      let sessions = 0;
      for (const connection of connections) sessions += connection.sessionInfos().length;
      return { connections: connections.size, sessions };
    },
    close() {
      for (const connection of connections) connection.close();
      for (const ws of otherKindSockets) ws.terminate();
      wss.close();
    },
  };
}
