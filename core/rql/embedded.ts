// RQL in JavaScript/TypeScript source: the string literal passed to `.filtered(…)` (how Realm JS code
// writes queries, subscriptions included: `mutableSubs.add(realm.objects("Task").filtered("…"))`),
// with a map from each query character back to the source, so a syntax error lands on the right column.
import { RqlSyntaxError, tryParseRql } from './parse';

export interface EmbeddedRql {
  /** The query text after the literal's escapes are decoded. */
  query: string;
  /** Source offsets of the literal's content (inside the quotes). */
  start: number;
  end: number;
  /** `sourceOffsets[i]` is the source offset of query character i; one more entry for the end. */
  sourceOffsets: number[];
}

export interface EmbeddedRqlProblem {
  /** Source offsets of the text at fault. */
  start: number;
  end: number;
  message: string;
  error: RqlSyntaxError;
}

const FILTERED_CALL = /\.filtered\s*\(\s*(["'`])/g;
/** Larger sources are not scanned (a bundled or generated file, not code someone edits). */
const MAX_SOURCE_LENGTH = 2_000_000;

const SIMPLE_ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', '0': '\0' };

/** Decodes one JS string literal starting after its opening quote; undefined when it is not a plain literal. */
function readLiteral(source: string, contentStart: number, quote: string): EmbeddedRql | undefined {
  let query = '';
  const sourceOffsets: number[] = [];
  let i = contentStart;
  while (i < source.length) {
    const c = source[i]!;
    if (c === quote) {
      sourceOffsets.push(i);
      return { query, start: contentStart, end: i, sourceOffsets };
    }
    if (quote === '`' && c === '$' && source[i + 1] === '{') return undefined;
    if (quote !== '`' && (c === '\n' || c === '\r')) return undefined;
    if (c === '\\') {
      const e = source[i + 1];
      if (e === undefined) return undefined;
      let decoded: string;
      let length = 2;
      if (e === 'u' && source[i + 2] === '{') {
        const close = source.indexOf('}', i + 3);
        if (close < 0) return undefined;
        decoded = String.fromCodePoint(parseInt(source.slice(i + 3, close), 16) || 0);
        length = close - i + 1;
      } else if (e === 'u') {
        decoded = String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16) || 0);
        length = 6;
      } else if (e === 'x') {
        decoded = String.fromCharCode(parseInt(source.slice(i + 2, i + 4), 16) || 0);
        length = 4;
      } else if (e === '\n') {
        decoded = '';
      } else {
        decoded = SIMPLE_ESCAPES[e] ?? e;
      }
      for (let k = 0; k < decoded.length; k++) sourceOffsets.push(i);
      query += decoded;
      i += length;
      continue;
    }
    sourceOffsets.push(i);
    query += c;
    i++;
  }
  return undefined;
}

/** Every `.filtered("…")` query of a JS/TS source whose argument is a plain string literal. */
export function findEmbeddedRql(source: string): EmbeddedRql[] {
  if (source.length > MAX_SOURCE_LENGTH || !source.includes('.filtered')) return [];
  const found: EmbeddedRql[] = [];
  FILTERED_CALL.lastIndex = 0;
  for (let m = FILTERED_CALL.exec(source); m; m = FILTERED_CALL.exec(source)) {
    const literal = readLiteral(source, m.index + m[0].length, m[1]!);
    if (literal) {
      found.push(literal);
      FILTERED_CALL.lastIndex = literal.end + 1;
    }
  }
  return found;
}

/** The syntax errors of the RQL queries in a JS/TS source, at source offsets. */
export function embeddedRqlProblems(source: string): EmbeddedRqlProblem[] {
  const problems: EmbeddedRqlProblem[] = [];
  for (const embedded of findEmbeddedRql(source)) {
    const result = tryParseRql(embedded.query);
    if (result.ok) continue;
    const { error } = result;
    const at = (offset: number) => embedded.sourceOffsets[Math.min(offset, embedded.sourceOffsets.length - 1)]!;
    const start = at(error.offset);
    const end = Math.max(start + 1, error.offset + error.length >= embedded.query.length ? embedded.end : at(error.offset + error.length));
    problems.push({ start, end: Math.min(end, Math.max(embedded.end, start + 1)), message: `Realm Query Language: ${error.reason}`, error });
  }
  return problems;
}
