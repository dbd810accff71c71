// Function execution for the local runtime: the runner, its host contract and its typed errors.
export {
  createFunctionRunner, DEFAULT_FUNCTION_TIMEOUT_MS, whyFunctionsCannotBeDebugged,
  type FunctionInspectorEvent, type FunctionInspectorOptions,
  type FunctionCallContext, type FunctionCaller, type FunctionHost, type FunctionLog, type FunctionRunner,
  type FunctionRunnerOptions, type FunctionSource, type FunctionUser,
} from './runner';
export {
  ExecutionTimeLimitExceeded, FunctionError, FunctionExecutionError, FunctionNotFound, FunctionSyntaxError,
  type FunctionErrorCode, type SourcePosition,
} from './errors';
export type { LogLevel } from './protocol';
export { DEBUG_NODE_HINT, currentNode, findDebugNode, probeNode, type FunctionNode } from './functionNode';
