// `can_evaluate` (of a function, a custom HTTPS endpoint, the Data API): whether a call may run. One rule for
// every caller: absent, `null` or `{}` always allows; otherwise the expression must hold for the call.
import { isObject } from '../json';
import { evaluateExpression, type EvaluationEnv } from './evaluate';

export async function canEvaluate(rule: unknown, env: EvaluationEnv): Promise<boolean> {
  if (rule === undefined || rule === null || (isObject(rule) && Object.keys(rule).length === 0)) return true;
  return evaluateExpression(rule, env);
}
