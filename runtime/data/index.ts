// Rule-checked data access for generated GraphQL, `mongodb-atlas` service calls and functions.
export { createDataAccess, type DataAccess, type DataAccessOptions, type DataAccessUser, type DataPrincipal, type DataScope } from './access';
export { DataAccessError, graphqlErrorMessage, type DataAccessErrorCode } from './errors';
export { compileSchema, matchesBsonType, writeValidationSettings, type SchemaValidator, type SchemaViolation, type WriteValidationSettings } from './schema';
