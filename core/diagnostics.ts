// The one diagnostic shape of the app model; the language server and `asl check` both print these.
import type { JSONPath, Range, TextFile, JsonFile } from './json';

export type Severity = 'error' | 'warning' | 'information' | 'hint';

export interface Diagnostic {
  /** Absolute path of the file the problem is in. */
  file: string;
  range: Range;
  severity: Severity;
  /** Stable code, `area/what`: `resolver/unknown-function`. Quick fixes and docs key on it. */
  code: string;
  message: string;
  /** Extra facts a quick fix needs (for example the missing function's name). JSON-serialisable. */
  data?: Record<string, unknown>;
  /** Other places the problem involves (LSP `relatedInformation`): each schema a sync setting disagrees with. */
  related?: RelatedLocation[];
}

export interface RelatedLocation {
  file: string;
  range: Range;
  message: string;
}

/** Collects diagnostics while loading or validating; each check adds to one sink. */
export class DiagnosticSink {
  readonly items: Diagnostic[] = [];

  add(d: Diagnostic): void { this.items.push(d); }

  /** Report at a JSON path of a parsed file. */
  at(file: JsonFile, path: JSONPath, severity: Severity, code: string, message: string, opts: { target?: 'key' | 'value'; data?: Record<string, unknown>; related?: RelatedLocation[] } = {}): void {
    this.items.push({
      file: file.path, range: file.range(path, opts.target), severity, code, message,
      ...(opts.data ? { data: opts.data } : {}), ...(opts.related?.length ? { related: opts.related } : {}),
    });
  }

  /** Report at a range of a text file (a function source, or a file-level problem). */
  atRange(file: TextFile, range: Range, severity: Severity, code: string, message: string, data?: Record<string, unknown>): void {
    this.items.push({ file: file.path, range, severity, code, message, ...(data ? { data } : {}) });
  }
}

const severityRank: Record<Severity, number> = { error: 0, warning: 1, information: 2, hint: 3 };

/** Stable order: by file, then position, then severity. */
export function sortDiagnostics(ds: Diagnostic[]): Diagnostic[] {
  return [...ds].sort((a, b) =>
    a.file < b.file ? -1 : a.file > b.file ? 1
      : a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character
      || severityRank[a.severity] - severityRank[b.severity] || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
}
