// Fragments defined in the workspace's other files, so that a spread may name a fragment of another file (as
// graphql-config's `documents` would give other tools): every `.graphql`/`.gql` file of the workspace folders,
// read from disk and kept up to date by file events, with the editor's open documents (GraphQL and
// JavaScript/TypeScript templates alike) laid over them.
import path from 'node:path';
import { Kind, type FragmentDefinitionNode } from 'graphql';
import type { AppFileSystem } from '../../core/fs';
import { graphqlHostOf, type EmbeddedGraphqlDocument } from '../../core/graphql/embedded';
import type { Range } from '../../core/json';
import { GraphqlDocuments } from './graphql';

export interface WorkspaceFragment {
  node: FragmentDefinitionNode;
  /** The file that defines it, and the range of its name there. */
  file: string;
  nameRange: Range;
}

/** Folders never searched: dependencies, build output, version control, the runtime's data. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'build', 'out', 'coverage']);
/** Bounds of the disk scan: a workspace beyond them is searched only up to them. */
const MAX_FILES = 2000;
const MAX_FOLDERS = 10_000;
const MAX_FILE_BYTES = 1024 * 1024;

export class WorkspaceFragments {
  private onDisk = new Map<string, string>();
  private readonly open = new Map<string, string>();
  /** The GraphQL documents of every file read, kept for its last text: shared with the language features, so an edit is parsed once. */
  readonly documents = new GraphqlDocuments();

  constructor(private readonly fs: AppFileSystem) {}

  /** Reads every `.graphql`/`.gql` file of the folders (again), up to the scan's bounds; requests meanwhile see the last scan. */
  async scan(folders: string[]): Promise<void> {
    const found = new Map<string, string>();
    const pending = [...folders];
    let folderCount = 0;
    while (pending.length && found.size < MAX_FILES && folderCount++ < MAX_FOLDERS) {
      const folder = pending.shift()!;
      for (const entry of (await this.fs.readDir(folder).catch(() => undefined)) ?? []) {
        const full = path.join(folder, entry.name);
        if (entry.isDirectory) {
          if (!entry.name.startsWith('.') && !SKIPPED_FOLDERS.has(entry.name)) pending.push(full);
        } else if (isGraphqlFile(full) && found.size < MAX_FILES) {
          const text = await this.read(full);
          if (text !== undefined) found.set(full, text);
        }
      }
    }
    this.onDisk = found;
  }

  /** A file changed on disk; returns whether the fragments it defines may have changed. */
  async fileChanged(file: string, kind: 'changed' | 'created' | 'deleted'): Promise<boolean> {
    if (!isGraphqlFile(file)) return false;
    const before = this.signature(file);
    const text = kind === 'deleted' ? undefined : await this.read(file);
    if (text === undefined) this.onDisk.delete(file);
    else this.onDisk.set(file, text);
    return before !== this.signature(file);
  }

  /** The editor's text of an open document; returns whether the fragments it defines changed. */
  setOpenText(file: string, text: string): boolean {
    if (!graphqlHostOf(file)) return false;
    const before = this.signature(file);
    this.open.set(file, text);
    return before !== this.signature(file);
  }

  /** A document was closed: its disk text counts again. Returns whether its fragments changed. */
  closeText(file: string): boolean {
    const before = this.signature(file);
    this.open.delete(file);
    this.documents.forget(file);
    return before !== this.signature(file);
  }

  /** The fragments of every file but `file` that `belongs` accepts (the files whose GraphQL uses the same app). */
  others(file: string, belongs: (other: string) => boolean): WorkspaceFragment[] {
    const out: WorkspaceFragment[] = [];
    for (const other of new Set([...this.onDisk.keys(), ...this.open.keys()])) {
      if (other === file || !belongs(other)) continue;
      for (const document of this.documentsOf(other)) out.push(...fragmentsOf(other, document));
    }
    return out;
  }

  /** The file's text, or undefined when it is gone, unreadable or too large to be a document of queries. */
  private async read(file: string): Promise<string | undefined> {
    const text = await this.fs.readFile(file).catch(() => undefined);
    return text !== undefined && text.length <= MAX_FILE_BYTES ? text : undefined;
  }

  private documentsOf(file: string): EmbeddedGraphqlDocument[] {
    const text = this.open.get(file) ?? this.onDisk.get(file);
    return text === undefined ? [] : this.documents.of(file, text);
  }

  /** The text of the file's fragments, to tell whether an edit changed any. */
  private signature(file: string): string {
    return this.documentsOf(file).flatMap((d) => d.fragments.map((f) => d.text.slice(f.start - d.start, f.end - d.start))).join('\u0000');
  }
}

function isGraphqlFile(file: string): boolean {
  return graphqlHostOf(file) === 'graphql';
}

function fragmentsOf(file: string, document: EmbeddedGraphqlDocument): WorkspaceFragment[] {
  // `document.fragments` lists the fragment definitions in the same order, with their file ranges.
  const nodes = document.definitions.map((d) => d.node).filter((node): node is FragmentDefinitionNode => node.kind === Kind.FRAGMENT_DEFINITION && !!node.loc);
  return nodes.map((node, i) => ({ node, file, nameRange: document.fragments[i].nameRange }));
}
