// What a migration changes on the wire. A partition-based client of an app migrated to flexible sync is
// accepted in its own protocol and its BIND answered with JSON_ERROR 232 (migrate_to_flx, action
// `MigrateToFLX`) carrying `partitionQuery`, the RQL realm-core subscribes every table of its realm with;
// it then resets into flexible sync. After a rollback, a flexible client that says it was migrated
// (`migratedPartition` in its BIND) gets 234 (revert_to_pbs, `RevertToPBS`) and resets back; a native
// flexible client still gets 114 (switch_to_pbs).
import type { WebSocket } from 'ws';
import { parsePartitionValue, partitionRql, type PartitionSettings, type SyncError } from '../../../core/sync';
import type { Logger } from '../../http/server';
import { refuseOtherKind } from '../sessions/endpoint';
import { DEFAULT_MESSAGE_LIMITS, encodeServerMessage, parseClientMessage, type ClientMessage } from '../wire/messages';
import { ErrorCode } from '../wire/errors';
import type { NegotiatedProtocol } from '../wire/negotiate';

/** How a connection of the other sync kind is answered while a migration holds. */
export type OtherKindPlan =
  | { kind: 'migrate'; partition: PartitionSettings; recoveryDisabled: boolean }
  | { kind: 'revert'; recoveryDisabled: boolean };

export function migrateToFlexibleError(partition: Pick<PartitionSettings, 'key'>, value: unknown): SyncError {
  return {
    code: ErrorCode.migrate_to_flx, name: 'ErrorMigrateToFlx', message: 'Server migrated to flexible sync - migrating client to use flexible sync',
    action: 'migrate-to-flx', tryAgain: false, body: { partitionQuery: partitionRql(partition.key, value), shouldClientReset: true },
  };
}

export const REVERT_TO_PARTITION_ERROR: SyncError = {
  code: ErrorCode.revert_to_pbs, name: 'ErrorRevertToPbs', message: 'Server rolled back after flexible sync migration - reverting client to partition based sync',
  action: 'revert-to-pbs', tryAgain: false, body: { shouldClientReset: true },
};

/** A native flexible session of an app rolled back to partition-based sync. */
export const SWITCH_TO_PARTITION_ERROR: SyncError = {
  code: ErrorCode.switch_to_pbs, name: 'ErrorSwitchToPbs', message: 'the app was rolled back to partition-based sync: open the realm with a partition value',
  action: 'fix-client', tryAgain: false,
};

const ANSWER_CONNECTION_MS = 60_000;

const ACTIONS: Partial<Record<SyncError['action'], string>> = { 'migrate-to-flx': 'MigrateToFLX', 'revert-to-pbs': 'RevertToPBS', 'fix-client': 'ApplicationBug' };

/** Serves one connection of the other sync kind: each BIND gets its session's answer; nothing is synced on it. */
export function answerOtherKind(ws: WebSocket, protocol: NegotiatedProtocol, plan: OtherKindPlan, log: Logger, userId: string): void {
  const send = (errorCode: number, session: number, error: SyncError) => ws.send(encodeServerMessage({
    type: 'json_error', errorCode, session,
    body: { message: error.message, tryAgain: error.tryAgain, action: ACTIONS[error.action] ?? 'ApplicationBug', shouldClientReset: false, isRecoveryModeDisabled: plan.recoveryDisabled, logURL: '', ...error.body },
  }, protocol.version));
  // Nothing syncs here: once its client has had its answers, the connection is not kept past a minute.
  const idle = setTimeout(() => ws.close(1000, 'the app changed sync mode: reconnect'), ANSWER_CONNECTION_MS);
  idle.unref();
  ws.on('close', () => clearTimeout(idle));
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    let message: ClientMessage;
    try {
      if (!isBinary) throw new Error('the protocol sends binary frames');
      message = parseClientMessage(data, { protocolVersion: protocol.version, flexible: protocol.flexible, limits: DEFAULT_MESSAGE_LIMITS });
    } catch (e) {
      log.warn(`sync: user ${userId}: message not understood on a connection of the app's former sync mode: ${(e as Error).message}`);
      ws.send(encodeServerMessage({ type: 'error', errorCode: ErrorCode.other_error, message: `message not understood: ${(e as Error).message}`, tryAgain: false, session: 0 }, protocol.version));
      setTimeout(() => ws.terminate(), 1000).unref();
      return;
    }
    if (message.type === 'ping') return ws.send(encodeServerMessage({ type: 'pong', timestamp: message.timestamp }, protocol.version));
    if (message.type !== 'bind') return; // the session got its error; what follows it is not read
    if (plan.kind === 'migrate') {
      const parsed = parsePartitionValue(message.serverPath, plan.partition);
      const error = parsed.ok ? migrateToFlexibleError(plan.partition, parsed.value) : parsed.error;
      log.info(`sync: user ${userId}: partition-based BIND ${message.serverPath.slice(0, 100)} on a migrated app answered with ${error.code}${parsed.ok ? ` (partitionQuery ${String(error.body!.partitionQuery)})` : ''}`);
      return send(error.code, message.session, error);
    }
    if (typeof message.bindJson?.migratedPartition === 'string') {
      log.info(`sync: user ${userId}: migrated flexible BIND on an app rolled back to partition-based sync answered with 234 (revert to partition-based sync)`);
      return send(ErrorCode.revert_to_pbs, message.session, REVERT_TO_PARTITION_ERROR);
    }
    refuseOtherKind(ws, protocol, false);
  });
}
