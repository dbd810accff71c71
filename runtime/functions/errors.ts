// Typed failures of a function call. `errorCode` is the platform's `error_code` for the client error body.

export type FunctionErrorCode =
  | 'FunctionNotFound'
  | 'FunctionExecutionError'
  | 'ExecutionTimeLimitExceeded'
  | 'FunctionSyntaxError';

export abstract class FunctionError extends Error {
  abstract readonly errorCode: FunctionErrorCode;
}

export class FunctionNotFound extends FunctionError {
  readonly errorCode = 'FunctionNotFound';
  constructor(readonly functionName: string) {
    super(`function not found: '${functionName}'`);
    this.name = 'FunctionNotFound';
  }
}

export class FunctionExecutionError extends FunctionError {
  readonly errorCode = 'FunctionExecutionError';
  /**
   * `functionStack`: where the function's own code threw (its file's path, line and column; frames of the
   * runtime left out), for the developer (`asl functions run`, the editor); never in a client's answer.
   */
  constructor(readonly functionName: string, message: string, readonly functionStack?: string) {
    super(message);
    this.name = 'FunctionExecutionError';
  }
}

export class ExecutionTimeLimitExceeded extends FunctionError {
  readonly errorCode = 'ExecutionTimeLimitExceeded';
  constructor(readonly functionName: string) {
    super('execution time limit exceeded');
    this.name = 'ExecutionTimeLimitExceeded';
  }
}

/** Zero-based position (the language server's convention) of a syntax error in a function's source. */
export interface SourcePosition { line: number; character: number }

export class FunctionSyntaxError extends FunctionError {
  readonly errorCode = 'FunctionSyntaxError';
  constructor(
    readonly functionName: string,
    readonly path: string,
    /** The parser's message without the location, e.g. "Unexpected token ';'". */
    readonly reason: string,
    readonly position: SourcePosition,
  ) {
    super(`${reason} (${path}:${position.line + 1}:${position.character + 1})`);
    this.name = 'FunctionSyntaxError';
  }
}
