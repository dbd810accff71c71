// The generated GraphQL schema of an app, shared by the runtime, the language server and `asl schema`.
export { GenerationCache, generateSchema } from './generate';
export { findCollectionType, printGeneratedSchema, sdlForResolverField, sdlForType } from './sdl';
export { graphqlPlural, pluralize, sanitizeGraphqlName, singularize } from './inflect';
export { GraphQLDateTime, GraphQLLong, GraphQLObjectId } from './scalars';
export type * from './types';
