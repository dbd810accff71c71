// Errors of rule-checked data access, shaped so the HTTP layer can answer `{error, error_code}` with
// `httpStatus`, and the GraphQL layer can format its `reason=…; code=…` message (graphql §11).

export type DataAccessErrorCode =
  /** No role applies to the user for the document (client-api §10). */
  | 'NoMatchingRuleFound'
  /** A role applies but does not allow the action (insert, delete, a field write, search). Uncertain on the platform, which words these "insert not permitted" etc. */
  | 'PermissionDenied'
  | 'SchemaValidationFailedWrite'
  /** The data source named in the call does not exist. */
  | 'ServiceNotFound'
  | 'InvalidParameter';

const HTTP_STATUS: Record<DataAccessErrorCode, number> = {
  NoMatchingRuleFound: 403,
  PermissionDenied: 403,
  SchemaValidationFailedWrite: 400,
  ServiceNotFound: 404,
  InvalidParameter: 400,
};

export class DataAccessError extends Error {
  readonly httpStatus: number;

  constructor(readonly errorCode: DataAccessErrorCode, message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DataAccessError';
    this.httpStatus = HTTP_STATUS[errorCode];
  }
}

/** The message form the platform's GraphQL API reports rule and validation failures in (graphql §11). */
export function graphqlErrorMessage(error: DataAccessError): string {
  const details = Object.entries(error.details).map(([key, value]) => `${key}:${String(value)}`).join(' ');
  return `reason=${JSON.stringify(error.message)}; code=${JSON.stringify(error.errorCode)}; untrusted=${JSON.stringify(untrustedText(error))}; details=map[${details}]`;
}

/** The short, client-safe wording of the failure. */
function untrustedText(error: DataAccessError): string {
  switch (error.errorCode) {
    case 'SchemaValidationFailedWrite': return 'write not permitted: document failed schema validation';
    case 'NoMatchingRuleFound': return 'no matching role found';
    default: return error.message;
  }
}

export function noMatchingRole(action: string, namespace: string): DataAccessError {
  return new DataAccessError('NoMatchingRuleFound', `${action} not permitted: no role applies to this user for a document of ${namespace}`);
}

export function notPermitted(action: string, why?: string): DataAccessError {
  return new DataAccessError('PermissionDenied', why ? `${action} not permitted: ${why}` : `${action} not permitted`);
}
