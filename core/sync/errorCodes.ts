// Protocol error codes of Realm sync by name (realm-core `doc/protocol.md` "Error codes",
// `src/realm/sync/protocol.hpp`), declared once for the runtime's sync rooms and for the tools that read
// what they send (the editor's and the CLI's traffic text). Codes 100..199 end the connection, 200..299 one session.

export const ERROR_CODE_TABLE = [
  [100, 'connection_closed', 'Connection closed (no error)'],
  [101, 'other_error', 'Other connection level error'],
  [102, 'unknown_message', 'Unknown type of input message'],
  [103, 'bad_syntax', 'Bad syntax in input message head'],
  [104, 'limits_exceeded', 'Limits exceeded in input message'],
  [105, 'wrong_protocol_version', 'Wrong protocol version (CLIENT)'],
  [106, 'bad_session_ident', 'Bad session identifier in input message'],
  [107, 'reuse_of_session_ident', 'Overlapping reuse of session identifier (BIND)'],
  [108, 'bound_in_other_session', 'Client file bound in other session (IDENT)'],
  [109, 'bad_message_order', 'Bad input message order'],
  [110, 'bad_decompression', 'Error in decompression (UPLOAD)'],
  [111, 'bad_changeset_header_syntax', 'Bad syntax in a changeset header (UPLOAD)'],
  [112, 'bad_changeset_size', 'Bad size specified in changeset header (UPLOAD)'],
  [113, 'switch_to_flx_sync', 'Connected with wrong wire protocol - should switch to FLX sync'],
  [114, 'switch_to_pbs', 'Connected with wrong wire protocol - should switch to PBS'],

  [200, 'session_closed', 'Session closed (no error)'],
  [201, 'other_session_error', 'Other session level error'],
  [202, 'token_expired', 'Access token expired'],
  [203, 'bad_authentication', 'Bad user authentication (BIND)'],
  [204, 'illegal_realm_path', 'Illegal Realm path (BIND)'],
  [205, 'no_such_realm', 'No such Realm (BIND)'],
  [206, 'permission_denied', 'Permission denied (BIND)'],
  [207, 'bad_server_file_ident', 'Bad server file identifier (IDENT) (obsolete)'],
  [208, 'bad_client_file_ident', 'Bad client file identifier (IDENT)'],
  [209, 'bad_server_version', 'Bad server version (IDENT, UPLOAD)'],
  [210, 'bad_client_version', 'Bad client version (IDENT, UPLOAD)'],
  [211, 'diverging_histories', 'Diverging histories (IDENT)'],
  [212, 'bad_changeset', 'Bad changeset (UPLOAD)'],
  // 213 left realm-core's enum, but the protocol doc and clients still know it as a session error.
  [213, 'disabled_session', 'Disabled session (BIND, IDENT, UPLOAD, MARK)'],
  [214, 'partial_sync_disabled', 'Partial sync disabled (BIND)'],
  [215, 'unsupported_session_feature', 'Unsupported session-level feature'],
  [216, 'bad_origin_file_ident', 'Bad origin file identifier (UPLOAD)'],
  [217, 'bad_client_file', 'Synchronization no longer possible for client-side file'],
  [218, 'server_file_deleted', 'Server file was deleted while session was bound to it'],
  [219, 'client_file_blacklisted', 'Client file has been blacklisted (IDENT)'],
  [220, 'user_blacklisted', 'User has been blacklisted (BIND)'],
  [221, 'transact_before_upload', 'Serialized transaction before upload completion'],
  [222, 'client_file_expired', 'Client file has expired'],
  [223, 'user_mismatch', 'User mismatch for client file identifier (IDENT)'],
  [224, 'too_many_sessions', 'Too many sessions in connection (BIND)'],
  [225, 'invalid_schema_change', 'Invalid schema change (UPLOAD)'],
  [226, 'bad_query', 'Client query is invalid/malformed (IDENT, QUERY)'],
  [227, 'object_already_exists', 'Client tried to create an object that already exists outside their view (UPLOAD)'],
  [228, 'server_permissions_changed', 'Server permissions for this file ident have changed since the last time it was used (IDENT)'],
  [229, 'initial_sync_not_completed', 'Client tried to open a session before initial sync is complete (BIND)'],
  [230, 'write_not_allowed', 'Client attempted a write that is disallowed by permissions, or modifies an object outside the current query - requires client reset (UPLOAD)'],
  [231, 'compensating_write', 'Client attempted a write that is disallowed by permissions, or modifies an object outside the current query, and the server undid the modification (UPLOAD)'],
  [232, 'migrate_to_flx', 'Server migrated from PBS to FLX - migrate client to FLX (BIND)'],
  [233, 'bad_progress', 'Bad progress information (ERROR)'],
  [234, 'revert_to_pbs', 'Server rolled back to PBS after FLX migration - revert FLX client migration (BIND)'],
  [235, 'bad_schema_version', 'Client tried to open a session with an invalid schema version (BIND)'],
  [236, 'schema_version_changed', 'Client opened a session with a new valid schema version - migrate client to use new schema version (BIND)'],
] as const;

type Row = (typeof ERROR_CODE_TABLE)[number];
export type ErrorCodeName = Row[1];

/** The codes by realm-core's enumerator name: `ErrorCode.bad_changeset` is 212. */
export const ErrorCode = Object.freeze(Object.fromEntries(ERROR_CODE_TABLE.map(([code, name]) => [name, code]))) as {
  readonly [R in Row as R[1]]: R[0];
};

/** Session-level codes end one session (the client answers with UNBIND); the others end the connection. */
export function isSessionLevelError(code: number): boolean {
  return code >= 200 && code <= 299;
}
