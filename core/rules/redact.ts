// Permission traces show the values a rule compared; some of those are secrets (a `%%values` entry
// backed by a secret, or anything a `%function` computed from one). Before a trace leaves the runtime,
// every occurrence of a secret's value is replaced, whichever path it took into the trace.
import type { EvaluationTrace } from './evaluate';

export const REDACTED = '[redacted secret]';

/** Secrets shorter than this are not searched for inside longer strings (a one-letter secret would blank every text). */
const MIN_EMBEDDED_LENGTH = 4;

/** A copy of the trace in which every secret value (whole, or inside a string) reads `[redacted secret]`. */
export function redactTrace(trace: EvaluationTrace, secretValues: readonly string[]): EvaluationTrace {
  const secrets = secretValues.filter((s) => s.length > 0);
  if (secrets.length === 0) return trace;
  const walk = (node: EvaluationTrace): EvaluationTrace => ({
    expression: node.expression,
    ...('subject' in node ? { subject: redactValue(node.subject, secrets) } : {}),
    ...('operand' in node ? { operand: redactValue(node.operand, secrets) } : {}),
    result: node.result,
    ...(node.note !== undefined ? { note: redactText(node.note, secrets) } : {}),
    children: node.children.map(walk),
  });
  return walk(trace);
}

/** A string with every secret value inside it replaced. */
export function redactText(text: string, secretValues: readonly string[]): string {
  let out = text;
  for (const secret of secretValues) {
    if (secret.length === 0) continue;
    if (out === secret) return REDACTED;
    if (secret.length >= MIN_EMBEDDED_LENGTH && out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** A value (walked through arrays and plain objects, keys included) with every secret value replaced. */
export function redactValue(value: unknown, secretValues: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return redactText(value, secretValues);
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secretValues, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  // fromEntries defines own properties, so a key named __proto__ stays a key.
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [redactText(k, secretValues), redactValue(v, secretValues, depth + 1)]));
}
