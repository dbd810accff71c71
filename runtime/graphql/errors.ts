// Error entries of the GraphQL response (graphql.md §11). Failures of the platform's own making — rules,
// schema validation, functions, the store — are reported in its key=value message form; GraphQL's own
// errors (syntax, validation, variable coercion) keep graphql-js messages.
import type { GraphQLError } from 'graphql';

export interface GraphqlErrorEntry {
  message: string;
  locations?: { line: number; column: number }[];
  path?: (string | number)[];
}

/** `reason="…"; code="…"; untrusted="…"; details=map[]`, quoted as Go's %q would. */
export function platformMessage(reason: string, code: string, untrusted: string): string {
  return `reason=${JSON.stringify(reason)}; code=${JSON.stringify(code)}; untrusted=${JSON.stringify(untrusted)}; details=map[]`;
}

interface CodedError { message: string; errorCode?: unknown; untrusted?: unknown; codeName?: unknown; code?: unknown }

/** The platform code of an error thrown below a resolver, or undefined for errors GraphQL itself raised. */
function platformCode(error: CodedError): string | undefined {
  if (typeof error.errorCode === 'string') return error.errorCode;
  // Store failures (duplicate key, bad update) carry MongoDB's numeric code and name.
  if (typeof error.codeName === 'string' && typeof error.code === 'number') return 'MongoDBError';
  return undefined;
}

export function toErrorEntry(error: GraphQLError): GraphqlErrorEntry {
  const original = error.originalError as CodedError | undefined;
  const code = original && platformCode(original);
  const message = code
    ? platformMessage(original!.message, code, typeof original!.untrusted === 'string' ? original!.untrusted : original!.message)
    : error.message;
  const entry: GraphqlErrorEntry = { message };
  if (error.locations && error.locations.length > 0) entry.locations = error.locations.map(({ line, column }) => ({ line, column }));
  if (error.path && error.path.length > 0) entry.path = [...error.path];
  return entry;
}
