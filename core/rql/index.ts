// Realm Query Language: parse, evaluate on BSON documents, translate to MongoDB filters, and check
// subscriptions against flexible sync's queryable fields. See README.md.
export type { CompareOp, Descriptor, Expr, Literal, PathSegment, Predicate, Quantifier, RqlQuery, Span } from './ast';
export { MAX_QUERY_DEPTH, MAX_QUERY_LENGTH, RqlSyntaxError, lineAndColumn, parseRql, tryParseRql } from './parse';
export { RqlArgumentError, applyDescriptors, compileRql, indexOfLinear, likeMatches, matches, type DocumentMatcher, type RqlArguments } from './evaluate';
export { ALWAYS_QUERYABLE_FIELDS, checkSubscriptionQuery, queriedFields, queryableFieldsOf, unsupportedInSubscriptions, type FieldUse, type QueryProblem, type QueryableFieldSettings } from './fields';
export { toMongoFilter, type Filter, type MongoTranslation } from './mongo';
export { compileSubscription, type CompiledSubscription, type SubscriptionResult } from './subscription';
export { embeddedRqlProblems, findEmbeddedRql, type EmbeddedRql, type EmbeddedRqlProblem } from './embedded';
