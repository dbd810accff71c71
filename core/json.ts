// Positioned JSON: every config file is parsed once with jsonc-parser, keeping the syntax tree so that
// any diagnostic can point at the exact key or value that caused it.
import { createScanner, findNodeAtLocation, getNodeValue, parseTree, printParseErrorCode, SyntaxKind, type JSONPath, type Node, type ParseError } from 'jsonc-parser';

export type { JSONPath, Node as JsonNode } from 'jsonc-parser';

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

/** A text file of the app, with a line index for offset → position conversion. */
export class TextFile {
  private lineStarts: number[] | undefined;
  constructor(
    /** Absolute path on disk (or in the injected file system). */
    readonly path: string,
    /** Path relative to the app root, with forward slashes: `graphql/custom_resolvers/x.json`. */
    readonly relPath: string,
    readonly text: string,
  ) {}

  positionAt(offset: number): Position {
    const starts = (this.lineStarts ??= computeLineStarts(this.text));
    offset = Math.max(0, Math.min(offset, this.text.length));
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid; else hi = mid - 1;
    }
    return { line: lo, character: offset - starts[lo] };
  }

  offsetAt(position: Position): number {
    const starts = (this.lineStarts ??= computeLineStarts(this.text));
    if (position.line >= starts.length) return this.text.length;
    if (position.line < 0) return 0;
    return Math.min(starts[position.line] + position.character, position.line + 1 < starts.length ? starts[position.line + 1] : this.text.length);
  }

  rangeOf(offset: number, length: number): Range {
    return { start: this.positionAt(offset), end: this.positionAt(offset + length) };
  }

  /** The range of the whole first line: where file-level problems are reported. */
  get startRange(): Range {
    const firstLineEnd = this.text.search(/\r?\n/);
    return this.rangeOf(0, firstLineEnd < 0 ? this.text.length : firstLineEnd);
  }
}

function computeLineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 13 /* \r */) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    } else if (ch === 10 /* \n */) starts.push(i + 1);
  }
  return starts;
}

export interface JsonSyntaxError { message: string; offset: number; length: number }

/** A parsed JSON config file. `value` is undefined when the text holds no JSON value at all. */
export class JsonFile extends TextFile {
  readonly root: Node | undefined;
  readonly value: unknown;
  readonly syntaxErrors: JsonSyntaxError[];
  /**
   * Offsets of commas before a closing `}` or `]`. The file still reads (the platform itself stored it), but
   * the platform CLI's strict parser refuses it: one warning per comma, never a syntax error.
   */
  readonly trailingCommas: number[];

  constructor(path: string, relPath: string, text: string) {
    super(path, relPath, text);
    const errors: ParseError[] = [];
    this.trailingCommas = trailingCommaOffsets(text);
    try {
      this.root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
      this.value = this.root ? getNodeValue(this.root) : undefined;
      this.syntaxErrors = errors.map((e) => ({ message: describeParseError(e), offset: e.offset, length: Math.max(e.length, 1) }));
    } catch (e) {
      // jsonc-parser recurses per nesting level; thousands of levels exhaust the stack. No config is that deep.
      if (!(e instanceof RangeError)) throw e;
      this.root = undefined;
      this.value = undefined;
      this.syntaxErrors = [{ message: 'JSON syntax error: the value is nested too deeply to read', offset: 0, length: 1 }];
    }
  }

  /** The node at a JSON path, if it exists. */
  nodeAt(path: JSONPath): Node | undefined {
    return this.root ? findNodeAtLocation(this.root, path) : undefined;
  }

  /**
   * Range of the value at `path`, or of its property key when `target` is 'key'.
   * Falls back to the nearest existing ancestor, then to the file start, so a diagnostic always has a place.
   */
  range(path: JSONPath, target: 'value' | 'key' = 'value'): Range {
    // A file's text never changes, so neither do its ranges: a reload after an edit elsewhere asks again
    // for the same places (the same diagnostics) of the files it did not change.
    const key = `${target}${path.map((p) => (typeof p === 'number' ? `#${p}` : `.${p.length}:${p}`)).join('')}`;
    let range = this.ranges.get(key);
    if (!range) this.ranges.set(key, (range = this.findRange(path, target)));
    return { start: { ...range.start }, end: { ...range.end } };
  }

  private readonly ranges = new Map<string, Range>();

  private findRange(path: JSONPath, target: 'value' | 'key'): Range {
    for (let depth = path.length; depth >= 0; depth--) {
      const node = this.nodeAt(path.slice(0, depth));
      if (!node) continue;
      if (depth === path.length && target === 'key' && node.parent?.type === 'property' && node.parent.children?.[0]) {
        const key = node.parent.children[0];
        return this.rangeOf(key.offset, key.length);
      }
      if (depth < path.length && node.type === 'object') {
        // The property is missing: point at the key of the object itself (or its opening brace).
        const keyNode = node.parent?.type === 'property' ? node.parent.children?.[0] : undefined;
        return keyNode ? this.rangeOf(keyNode.offset, keyNode.length) : this.rangeOf(node.offset, 1);
      }
      return this.rangeOf(node.offset, node.length);
    }
    return this.startRange;
  }
}

function trailingCommaOffsets(text: string): number[] {
  const offsets: number[] = [];
  // Scanning costs as much as parsing; most files have no comma before a closing bracket at all.
  if (!/,(?:\s|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*[}\]]/.test(text)) return offsets;
  const scanner = createScanner(text, true);
  let pendingComma = -1;
  for (let kind = scanner.scan(); kind !== SyntaxKind.EOF; kind = scanner.scan()) {
    if (kind === SyntaxKind.LineCommentTrivia || kind === SyntaxKind.BlockCommentTrivia) continue;
    if ((kind === SyntaxKind.CloseBraceToken || kind === SyntaxKind.CloseBracketToken) && pendingComma >= 0) offsets.push(pendingComma);
    pendingComma = kind === SyntaxKind.CommaToken ? scanner.getTokenOffset() : -1;
  }
  return offsets;
}

function describeParseError(e: ParseError): string {
  const code = printParseErrorCode(e.error);
  const words = code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return `JSON syntax error: ${words}`;
}

/** Escapes a JSON path for messages: `properties.name.bsonType`. */
export function formatPath(path: JSONPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(root)';
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
