// The protocol's TEST_COMMAND messages, which realm-core's own test suite sends (SyncSession's
// send_test_command): each acts on the sending session only, so no client can reach another one with them.
// The reply body is JSON; "{}" means done, as the platform's server answered.
import { ErrorCode } from '../wire/errors';

/** What a test command asks of the session that sent it. */
export type TestCommand =
  /** Stop sending the session history it has not seen, until its next subscription change bootstraps it. */
  | { kind: 'pauseRouter' }
  /** Stop (and later resume) building the session's DOWNLOADs: bootstraps and history alike. */
  | { kind: 'pauseDownloads' }
  | { kind: 'resumeDownloads' }
  /** Answer with an error of this code and JSON body, as if the server had met it. */
  | { kind: 'echoError'; errorCode: number; body: Record<string, unknown> }
  | { kind: 'refused'; reason: string };

const MAX_ECHOED_BODY_KEYS = 64;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a TEST_COMMAND body: `{"command": NAME, "args": {...}}`. */
export function parseTestCommand(body: string): TestCommand {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'refused', reason: 'the test command is not JSON' };
  }
  if (!isRecord(json) || typeof json.command !== 'string') return { kind: 'refused', reason: 'a test command names its command in "command"' };
  switch (json.command) {
    case 'PAUSE_ROUTER_SESSION': return { kind: 'pauseRouter' };
    case 'PAUSE_DOWNLOAD_BUILDER': return { kind: 'pauseDownloads' };
    case 'RESUME_DOWNLOAD_BUILDER': return { kind: 'resumeDownloads' };
    case 'ECHO_ERROR': {
      const args = json.args;
      if (!isRecord(args) || !Number.isInteger(args.errorCode) || !isRecord(args.errorBody)) {
        return { kind: 'refused', reason: 'ECHO_ERROR takes "args": {"errorCode": <integer>, "errorBody": {...}}' };
      }
      const errorCode = args.errorCode as number;
      if (errorCode < 100 || errorCode > 999) return { kind: 'refused', reason: `ECHO_ERROR's errorCode ${errorCode} is not a protocol error code (100..999)` };
      if (Object.keys(args.errorBody).length > MAX_ECHOED_BODY_KEYS) return { kind: 'refused', reason: `ECHO_ERROR's errorBody has more than ${MAX_ECHOED_BODY_KEYS} keys` };
      return { kind: 'echoError', errorCode, body: args.errorBody };
    }
    default:
      return { kind: 'refused', reason: `unknown test command ${JSON.stringify(json.command.slice(0, 64))}` };
  }
}

/** Error codes after which the platform's client keeps its session (a warning, a schema version to migrate to). */
export const SESSION_KEEPING_ERRORS: ReadonlySet<number> = new Set([ErrorCode.compensating_write, ErrorCode.schema_version_changed]);
