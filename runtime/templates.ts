// Where the bundled template apps are: `templates/` next to `dist/` (the bundles) or next to `runtime/`
// (sources run through tsx): both are one folder up from this file's folder.
import path from 'node:path';
import { nodeFileSystem } from '../core/fs';
import type { TemplateSource } from '../core/templates';

export function bundledTemplatesFolder(): string {
  return path.resolve(__dirname, '..', 'templates');
}

export function bundledTemplates(): TemplateSource {
  return { fs: nodeFileSystem, root: bundledTemplatesFolder() };
}
