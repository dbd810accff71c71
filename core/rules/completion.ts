// Completion candidates and hover text for rule expression strings and keys, built from the tables.
import { EXPANSIONS, EXPANSIONS_BY_NAME, OPERATORS, OPERATORS_BY_NAME, type ExpressionContext, type ExpressionFacts } from './tables';
import { checkExpansion, EXPANSION_PREFIX, parseExpansion } from './expansion';

export type RuleCompletionKind = 'expansion' | 'member' | 'field' | 'value' | 'operator';

export interface RuleCompletion {
  /** The whole text to put in place of the prefix: `%%user.custom_data.team`. */
  label: string;
  kind: RuleCompletionKind;
  /** One line: what the candidate is. */
  detail: string;
  /** Markdown. */
  documentation: string;
}

/**
 * Candidates that extend `prefix`: expansions after `%%`, members after `%%user.` (and the other
 * expansions with known members), custom data fields after `%%user.custom_data.`, value names after
 * `%%values.`, operators after `$` or `%`. With a context, only what is usable there is offered.
 */
export function completionsAt(prefix: string, facts: ExpressionFacts, context?: ExpressionContext): RuleCompletion[] {
  return candidates(prefix, facts, context).filter((c) => c.label.startsWith(prefix));
}

function candidates(prefix: string, facts: ExpressionFacts, context: ExpressionContext | undefined): RuleCompletion[] {
  const usable = (allowedIn: readonly ExpressionContext[]) => context === undefined || allowedIn.includes(context);
  const expansions = (): RuleCompletion[] => EXPANSIONS.filter((e) => usable(e.allowedIn)).map((e) => ({
    label: e.label, kind: 'expansion', detail: `expansion ${e.label}`, documentation: e.description,
  }));
  const operators = (sigil: string): RuleCompletion[] => OPERATORS.filter((o) => o.name.startsWith(sigil) && usable(o.allowedIn)).map((o) => ({
    label: o.name, kind: 'operator', detail: `operator ${o.name}${o.documented ? '' : ' (undocumented)'}`,
    documentation: o.description + (o.example ? `\n\n\`${o.example}\`` : ''),
  }));

  if (!prefix.startsWith(EXPANSION_PREFIX)) {
    if (prefix.startsWith('$')) return operators('$');
    if (prefix.startsWith('%')) return [...operators('%'), ...expansions()];
    return [];
  }
  const { name, path } = parseExpansion(prefix);
  if (path.length === 0) return expansions();
  const info = EXPANSIONS_BY_NAME.get(name);
  if (!info || !usable(info.allowedIn)) return [];
  const parent = [info.label, ...path.slice(0, -1)].join('.');
  const named = (names: Iterable<string> | undefined, kind: RuleCompletionKind, what: string): RuleCompletion[] =>
    [...(names ?? [])].map((n) => ({ label: `${parent}.${n}`, kind, detail: what, documentation: `\`${parent}.${n}\`: ${what} \`${n}\`.` }));

  if (path.length === 1) {
    if (info.name === 'values') return named(facts.valueNames, 'value', 'app value');
    return info.members.map((m) => ({ label: `${info.label}.${m.name}`, kind: 'member', detail: `${info.label}.${m.name}`, documentation: m.description }));
  }
  if (path.length === 2 && info.name === 'user' && path[0] === 'custom_data') return named(facts.customDataFields, 'field', 'custom user data field');
  if (path.length === 2 && info.name === 'environment' && path[0] === 'values') return named(facts.environmentValueNames, 'value', 'environment value');
  return [];
}

/** Hover text (markdown) for a whole expansion or operator string, or undefined when it is neither. */
export function describeRuleToken(text: string): string | undefined {
  const op = OPERATORS_BY_NAME.get(text);
  if (op) {
    const lines = [`**${op.name}** — ${op.kind} operator${op.documented ? '' : ' (undocumented)'}`, '', op.description];
    if (op.example) lines.push('', '`' + op.example + '`');
    return lines.join('\n');
  }
  if (!text.startsWith(EXPANSION_PREFIX)) return undefined;
  const check = checkExpansion(text);
  if (!check.ok) return undefined;
  const { info, parsed } = check;
  const member = info.members.find((m) => m.name === parsed.path[0]);
  const lines = [`**${text}** — expansion`, '', member ? `${member.description}\n\nPart of \`${info.label}\`: ${info.description}` : info.description];
  return lines.join('\n');
}
