// The rule expression language (rules-and-sync §1): analysis for the editor and `asl check`,
// evaluation and query expansion for the runtime, and the tables completion and hover are built from.
export * from './tables';
export { analyzeExpression, MAX_EXPRESSION_DEPTH } from './analyze';
export { checkExpansion, isExpansion, parseExpansion, type ExpansionCheck, type ParsedExpansion } from './expansion';
export { bsonCompare, bsonEquals, CONVERSIONS } from './bsonValues';
export { evaluateExpression, evaluateExpressionTraced, type EvaluationTrace, type EvaluationEnv, type EvaluationUser, type RuleEvaluationError } from './evaluate';
export { canEvaluate } from './canEvaluate';
export { expandExpressionToQuery, matchNothingQuery } from './query';
export { completionsAt, describeRuleToken, type RuleCompletion, type RuleCompletionKind } from './completion';
export { compileExpression, type CompiledExpression } from './compile';
export { redactTrace, redactText, redactValue, REDACTED } from './redact';
export { syncIncompatibilities, type SyncIncompatibility } from './sync-compatibility';
