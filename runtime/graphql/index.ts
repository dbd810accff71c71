// The runtime's GraphQL API: the endpoint and the request-scoped pieces its caller provides.
export {
  createGraphqlEndpoint, depthLimitRule,
  type GraphqlEndpoint, type GraphqlEndpointOptions, type GraphqlEndpointStats, type GraphqlLimits, type GraphqlResponse, type GraphqlResponseBody,
} from './endpoint';
export { registerGraphqlRoute, type GraphqlRouteOptions } from './route';
export type { CollectionFor, RunFunction } from './context';
export { platformMessage, type GraphqlErrorEntry } from './errors';
export { PayloadMismatchError } from './payload';
