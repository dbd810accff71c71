// Runs one version of an app through what the language server does on an edit: load, check, then
// completion, hover and code actions in the edited files. Every call is timed, every exception is
// reported with where it happened, and every range a call returns must lie inside its document.
import path from 'node:path';
import type { CodeAction, CompletionItem, Range } from 'vscode-languageserver';
import { CheckCache, checkApp } from '../../../core/check';
import { memoryFileSystem } from '../../../core/fs';
import { JsonFile, type JsonNode, type Position, type TextFile } from '../../../core/json';
import { loadApp, ParseCache } from '../../../core/load';
import { toLspDiagnostic, uriToPath } from '../../../server/convert';
import { codeActions } from '../../../server/features/codeActions';
import { completion } from '../../../server/features/completion';
import { hover } from '../../../server/features/hover';
import type { LoadedApp } from '../../../server/workspace';
import { APP_ROOT } from '../../helpers/app';
import { nodePools } from './mutations';

export type Operation = 'load + check' | 'completion' | 'hover' | 'code actions';

/**
 * Where a request points: an offset into the text, an edge of a JSON node (its start, just inside it,
 * its last character, just after it), or a raw position that may lie outside the text.
 */
export type RequestPoint = { offset: number } | { node: number; edge: 0 | 1 | 2 | 3 } | { line: number; character: number };

export interface DocumentRequests { rel: string; points: readonly RequestPoint[] }

export interface Slowest { ms: number; where: string }

/** The failure of one call, with enough context to reproduce it. */
export class FuzzFailure extends Error {
  constructor(readonly operation: Operation, readonly where: string, message: string, options?: { cause?: unknown }) {
    super(`${operation} at ${where}: ${message}`, options);
  }
}

export class Timings {
  readonly slowest = new Map<Operation, Slowest>();
  calls = 0;
  /** Calls measured again because their first time was over the limit. */
  remeasured = 0;

  record(operation: Operation, ms: number, where: string): void {
    this.calls++;
    const known = this.slowest.get(operation);
    if (!known || ms > known.ms) this.slowest.set(operation, { ms, where });
  }

  summary(): string {
    const slowest = [...this.slowest].map(([op, s]) => `${op} ${s.ms.toFixed(1)} ms (${s.where})`).join('; ');
    return this.remeasured ? `${slowest}; ${this.remeasured} measurements repeated after exceeding the limit` : slowest;
  }
}

/** Names the open bug a failure is an instance of, or undefined for a new failure. */
export type KnownBugs = (failure: FuzzFailure) => string | undefined;

export class Exerciser {
  private parseCache = new ParseCache();
  private checkCache = new CheckCache();
  /** How often each known bug was hit; those calls count as answered empty, as the server's guard answers them. */
  readonly knownBugHits = new Map<string, number>();

  constructor(private readonly knownBugs: KnownBugs = () => undefined, readonly timings = new Timings(), readonly limitMs = 1000) {}

  /** `files`: relative path → text of the whole app; `requests`: documents of it to query. */
  async run(files: ReadonlyMap<string, string>, requests: readonly DocumentRequests[], options: { freshCaches?: boolean; schemaDocumentation?: boolean; label?: string } = {}): Promise<void> {
    if (options.freshCaches) { this.parseCache = new ParseCache(); this.checkCache = new CheckCache(); }
    const textByPath = new Map([...files].map(([rel, text]) => [path.join(APP_ROOT, rel), text]));
    const fs = memoryFileSystem(Object.fromEntries(textByPath));
    const loadAndCheck = async (parseCache: ParseCache, checkCache: CheckCache): Promise<LoadedApp> => {
      const model = await loadApp(fs, APP_ROOT, { cache: parseCache });
      return { model, diagnostics: checkApp(model, checkCache), cache: checkCache };
    };
    // A repeated measurement starts cold: the first one filled the caches, and cold is the worst case.
    const app = await this.timed('load + check', options.label ?? requests.map((r) => r.rel).join(', '),
      () => loadAndCheck(this.parseCache, this.checkCache), () => loadAndCheck(new ParseCache(), new CheckCache()));
    if (!app) return;
    const ranges = new RangeChecker();
    const textOf = (absPath: string) => textByPath.get(absPath) ?? app.model.files.get(absPath)?.text;
    this.verify(() => {
      for (const d of app.diagnostics) {
        const text = textOf(d.file);
        if (text === undefined) throw new FuzzFailure('load + check', d.file, `diagnostic ${d.code} is in a file the app does not have`);
        ranges.assertInside(d.range, text, 'load + check', `${d.file} (${d.code})`);
      }
    });
    const settings = { schemaDocumentation: options.schemaDocumentation ?? true };
    for (const { rel, points } of requests) {
      const absPath = path.join(APP_ROOT, rel);
      const text = files.get(rel)!;
      const loaded = app.model.files.get(absPath);
      const file: JsonFile | TextFile = loaded && loaded.text === text ? loaded : new JsonFile(absPath, rel, text);
      const diagnostics = app.diagnostics.filter((d) => d.file === absPath).map(toLspDiagnostic);
      let nodes: JsonNode[] | undefined;
      const valueNodes = () => (nodes ??= nodePools(text).value);
      for (const point of points) {
        const position = 'line' in point ? point : file.positionAt(offsetOf(point, text, valueNodes));
        const where = `${rel}:${position.line}:${position.character}`;
        const list = await this.timed('completion', where, () => completion(app, file, position, settings));
        this.verify(() => { for (const item of list?.items ?? []) checkCompletionItem(ranges, item, text, where); });
        const info = await this.timed('hover', where, () => hover(app, file, position, settings));
        this.verify(() => {
          if (info?.range) ranges.assertInside(info.range, text, 'hover', where);
          if (info) assertNoLeakedObject(JSON.stringify(info.contents), 'hover', where);
        });
        const here = diagnostics.filter((d) => contains(d.range, position));
        const actions = await this.timed('code actions', where, () => codeActions(app, file, here));
        this.verify(() => checkCodeActions(ranges, actions ?? [], textOf, where));
      }
      const where = `${rel} (all ${diagnostics.length} diagnostics)`;
      const actions = await this.timed('code actions', where, () => codeActions(app, file, diagnostics));
      this.verify(() => checkCodeActions(ranges, actions ?? [], textOf, where));
    }
  }

  /**
   * The call's result; undefined when it failed with a known bug. A call over the limit is measured
   * twice more with `again` and its fastest time counts, so that a busy machine pausing the process
   * once does not fail the run, while a call that is really slow still does.
   */
  private async timed<T>(operation: Operation, where: string, call: () => T | Promise<T>, again: () => unknown = call): Promise<T | undefined> {
    const started = performance.now();
    let result: T;
    try {
      result = await call();
    } catch (e) {
      return this.fail(new FuzzFailure(operation, where, `threw ${(e as Error)?.stack ?? String(e)}`, { cause: e }));
    }
    let ms = performance.now() - started;
    for (let repeat = 0; repeat < 2 && ms > this.limitMs; repeat++) {
      this.timings.remeasured++;
      const restarted = performance.now();
      await again();
      ms = Math.min(ms, performance.now() - restarted);
    }
    this.timings.record(operation, ms, where);
    if (ms > this.limitMs) return this.fail(new FuzzFailure(operation, where, `took ${ms.toFixed(0)} ms (limit ${this.limitMs} ms)`));
    return result;
  }

  /** Runs checks of a call's result; their failures are classified like the call's own. */
  private verify(checks: () => void): void {
    try {
      checks();
    } catch (e) {
      if (!(e instanceof FuzzFailure)) throw e;
      this.fail(e);
    }
  }

  private fail(failure: FuzzFailure): undefined {
    const bug = this.knownBugs(failure);
    if (!bug) throw failure;
    this.knownBugHits.set(bug, (this.knownBugHits.get(bug) ?? 0) + 1);
    return undefined;
  }
}

function offsetOf(point: { offset: number } | { node: number; edge: 0 | 1 | 2 | 3 }, text: string, valueNodes: () => JsonNode[]): number {
  if ('offset' in point) return point.offset % (text.length + 1);
  const nodes = valueNodes();
  if (!nodes.length) return 0;
  const node = nodes[point.node % nodes.length];
  return [node.offset, node.offset + 1, node.offset + node.length - 1, node.offset + node.length][point.edge];
}

function contains(range: Range, p: Position): boolean {
  const before = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.character <= b.character);
  return before(range.start, p) && before(p, range.end);
}

/**
 * Text shown to the user that holds `[object Object]` or a function's source comes from an object
 * or a prototype member where a string was meant (`table[nameFromFile]` with `name` = "constructor").
 */
function assertNoLeakedObject(shown: string, operation: Operation, where: string): void {
  if (/\[object Object\]|\[native code\]/.test(shown)) throw new FuzzFailure(operation, where, `shows a JavaScript object instead of a name: ${shown.slice(0, 300)}`);
}

function checkCompletionItem(ranges: RangeChecker, item: CompletionItem, text: string, where: string): void {
  if (typeof item.label !== 'string') throw new FuzzFailure('completion', where, `item label is not a string: ${JSON.stringify(item.label)}`);
  assertNoLeakedObject(item.label, 'completion', where);
  const edit = item.textEdit;
  if (edit && 'range' in edit) ranges.assertInside(edit.range, text, 'completion', `${where} item ${JSON.stringify(item.label)}`);
  else if (edit) {
    ranges.assertInside(edit.insert, text, 'completion', `${where} item ${JSON.stringify(item.label)} (insert)`);
    ranges.assertInside(edit.replace, text, 'completion', `${where} item ${JSON.stringify(item.label)} (replace)`);
  }
  for (const e of item.additionalTextEdits ?? []) ranges.assertInside(e.range, text, 'completion', `${where} item ${JSON.stringify(item.label)} (additional edit)`);
}

/** Edits must target documents of the app (or ones the same action creates) and lie inside them. */
function checkCodeActions(ranges: RangeChecker, actions: CodeAction[], textOf: (absPath: string) => string | undefined, where: string): void {
  for (const action of actions) {
    assertNoLeakedObject(action.title, 'code actions', where);
    const created = new Set<string>();
    const documentText = (uri: string) => (created.has(uri) ? '' : textOf(uriToPath(uri) ?? uri));
    const checkEdits = (uri: string, edits: Range[]) => {
      const text = documentText(uri);
      if (text === undefined) throw new FuzzFailure('code actions', where, `"${action.title}" edits ${uri}, which is neither in the app nor created by the action`);
      for (const r of edits) ranges.assertInside(r, text, 'code actions', `${where} "${action.title}" in ${uri}`);
    };
    for (const change of action.edit?.documentChanges ?? []) {
      if (!('kind' in change)) checkEdits(change.textDocument.uri, change.edits.map((e) => e.range));
      else if (change.kind === 'create') created.add(change.uri);
    }
    for (const [uri, edits] of Object.entries(action.edit?.changes ?? {})) checkEdits(uri, edits.map((e) => e.range));
  }
}

/** Checks ranges against documents; line tables are kept for the documents of one app version. */
class RangeChecker {
  private readonly lineLengths = new Map<string, number[]>();

  /** Line lengths as an editor counts them: UTF-16 units without the line break; \r\n, \r and \n all break. */
  private linesOf(text: string): number[] {
    let lengths = this.lineLengths.get(text);
    if (!lengths) this.lineLengths.set(text, (lengths = text.split(/\r\n|\r|\n/).map((line) => line.length)));
    return lengths;
  }

  assertInside(range: Range, text: string, operation: Operation, where: string): void {
    const lengths = this.linesOf(text);
    const valid = (p: Position) => Number.isInteger(p.line) && Number.isInteger(p.character) && p.line >= 0 && p.character >= 0
      && p.line < lengths.length && p.character <= lengths[p.line];
    const ordered = range.start.line < range.end.line || (range.start.line === range.end.line && range.start.character <= range.end.character);
    if (!valid(range.start) || !valid(range.end) || !ordered) {
      throw new FuzzFailure(operation, where, `range ${JSON.stringify(range)} is not inside the document (${lengths.length} lines)`);
    }
  }
}
