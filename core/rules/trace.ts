// The evaluation trace of a rule expression as text, one line per part, indented by depth: the one format
// of `asl sync simulate`, the editor's "Open Partition as User…" view and anything else that shows a trace.
import { EJSON } from 'bson';
import type { EvaluationTrace } from './evaluate';

const MAX_VALUE_CHARACTERS = 160;

/** `✓ "%%user.id": "%%partition"   [subject "a", operand "a"]`, then the parts it is made of, indented. */
export function traceLines(trace: EvaluationTrace, indent = '  '): string[] {
  const lines: string[] = [];
  const walk = (node: EvaluationTrace, at: string) => {
    const values: string[] = [];
    if ('subject' in node) values.push(`subject ${showValue(node.subject)}`);
    if ('operand' in node) values.push(`operand ${showValue(node.operand)}`);
    lines.push(`${at}${node.result ? '✓' : '✗'} ${node.expression}${values.length ? `   [${values.join(', ')}]` : ''}${node.note ? `   (${node.note})` : ''}`);
    for (const child of node.children) walk(child, `${at}  `);
  };
  walk(trace, indent);
  return lines;
}

/** A value as relaxed EJSON, cut to a line's worth. */
export function showValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  const text = EJSON.stringify(value as never, { relaxed: true });
  return text.length > MAX_VALUE_CHARACTERS ? `${text.slice(0, MAX_VALUE_CHARACTERS - 3)}...` : text;
}
