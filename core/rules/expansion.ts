// Parsing and checking of expansion strings (`%%user.custom_data.team`) against the expansion table.
import { EXPANSIONS, EXPANSIONS_BY_NAME, type ExpansionInfo } from './tables';
import { closestName } from '../spelling';

export const EXPANSION_PREFIX = '%%';

export function isExpansion(text: unknown): text is `%%${string}` {
  return typeof text === 'string' && text.startsWith(EXPANSION_PREFIX);
}

export interface ParsedExpansion {
  /** The name after `%%`: `user`. */
  name: string;
  /** The dotted path after the name: `['custom_data', 'team']`. */
  path: string[];
}

export function parseExpansion(text: string): ParsedExpansion {
  const [name, ...path] = text.slice(EXPANSION_PREFIX.length).split('.');
  return { name, path };
}

export type ExpansionCheck =
  | { ok: true; info: ExpansionInfo; parsed: ParsedExpansion }
  | { ok: false; message: string; suggestion?: string };

/** Whether the expansion is well-formed; when not, why, and the closest valid spelling if there is one. */
export function checkExpansion(text: string): ExpansionCheck {
  const parsed = parseExpansion(text);
  const info = EXPANSIONS_BY_NAME.get(parsed.name);
  if (!info) {
    const name = closest(parsed.name, EXPANSIONS.map((e) => e.name));
    const fixed = name === undefined ? undefined : checkExpansion(`${EXPANSION_PREFIX}${[name, ...parsed.path].join('.')}`);
    const suggestion = fixed?.ok ? `${EXPANSION_PREFIX}${[name, ...parsed.path].join('.')}` : fixed?.suggestion;
    return { ok: false, message: `Unknown expansion '${text}'.`, ...(suggestion ? { suggestion } : {}) };
  }
  if (parsed.path.some((segment) => segment === '')) {
    return { ok: false, message: `'${text}' has an empty path segment.` };
  }
  switch (info.path) {
    case 'none':
      return parsed.path.length === 0 ? { ok: true, info, parsed }
        : { ok: false, message: `'${info.label}' has no members.`, suggestion: info.label };
    case 'name':
      return parsed.path.length > 0 ? { ok: true, info, parsed }
        : { ok: false, message: `'${info.label}' needs a name: '${info.label}.<name>'.` };
    case 'any':
      return { ok: true, info, parsed };
    case 'members': {
      if (parsed.path.length === 0) return { ok: true, info, parsed };
      const [first, ...rest] = parsed.path;
      const member = info.members.find((m) => m.name === first);
      if (!member) {
        const name = closest(first, info.members.map((m) => m.name));
        const suggestion = name === undefined ? undefined : [info.label, name, ...rest].join('.');
        return { ok: false, message: `'${info.label}' has no member '${first}'.`, ...(suggestion ? { suggestion } : {}) };
      }
      if (rest.length > 0 && !member.deeper) {
        return { ok: false, message: `'${info.label}.${member.name}' has no members.`, suggestion: `${info.label}.${member.name}` };
      }
      return { ok: true, info, parsed };
    }
  }
}

/** The candidate nearest to `word`, if it is near enough to be a misspelling. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  return closestName(word, candidates);
}
