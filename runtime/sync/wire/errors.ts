// The protocol error codes' meanings (codes and names: `core/sync/errorCodes.ts`), and the error every
// parser in wire/ throws.
import { ERROR_CODE_TABLE, isSessionLevelError, type ErrorCodeName } from '../../../core/sync/errorCodes';

export { ErrorCode, isSessionLevelError, type ErrorCodeName } from '../../../core/sync/errorCodes';

export interface ProtocolErrorInfo {
  name: ErrorCodeName;
  /** What the code means, a short sentence fit for an ERROR message body. */
  message: string;
  sessionLevel: boolean;
}

export const PROTOCOL_ERRORS: ReadonlyMap<number, ProtocolErrorInfo> = new Map(
  ERROR_CODE_TABLE.map(([code, name, message]) => [code, { name, message, sessionLevel: isSessionLevelError(code) }]),
);

/**
 * What a wire parser throws on malformed or over-limit input. `code` is the protocol error to answer with:
 * 102 unknown message type, 103 bad syntax in a head, 104 limits exceeded, 106 bad session ident,
 * 110 bad compression, 111/112 bad changeset header/size, 212 a changeset that does not parse.
 */
export class WireError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = 'WireError';
    this.code = code;
  }
  get sessionLevel(): boolean {
    return isSessionLevelError(this.code);
  }
}
